"""A service stopped while it is still starting closes what its start opened.

FastStream's lifespan (`start_lifespan_context`, what uvicorn runs) hands over once the startup
hooks ran, and starts the broker after that. A stop that came meanwhile found the subscribers'
Kafka consumers not built yet and stopped nothing; the start then built and opened them after
the stop: an unclosed AIOKafkaConsumer (the "Unclosed AIOKafkaConsumer" line at the end of the
test run came from a test that leaves a service at once). The runtime's first shutdown hook
now waits for the start to end (`Service.wait_until_started`).

The race is made certain here: the subscriber's start waits at a gate that opens 0.3 s after
the service is told to stop, and the stop's last hook takes 1 s, as a slow one may.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from discospace.events import ActuatorRegistered, TopicNames
from discospace.runtime import ServiceSettings, create_service
from discospace.testing.kafka import create_topics, delete_topics

GATE_S = 0.3
LAST_HOOK_S = 1.0


@pytest.mark.integration
async def test_a_service_stopped_while_it_starts_closes_every_consumer_and_task(
    kafka_bootstrap: str, topics: TopicNames
) -> None:
    await create_topics(kafka_bootstrap, {topics.actuators: 1})
    try:
        settings = ServiceSettings(
            kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix
        )
        service = create_service(settings, description="Stopped while it starts.")
        consumer = service.consumer(topics.actuators)

        async def on_announcement(event: ActuatorRegistered) -> None:
            pass

        consumer(on_announcement)
        gate = asyncio.Event()
        start = consumer.subscriber.start

        async def start_at_the_gate(*args: Any, **kwargs: Any) -> None:
            await gate.wait()
            await start(*args, **kwargs)

        async def slow_last_hook() -> None:
            await asyncio.sleep(LAST_HOOK_S)

        consumer.subscriber.start = start_at_the_gate
        service.on_shutdown(slow_last_hook)

        async with service.app.start_lifespan_context():
            asyncio.get_running_loop().call_later(GATE_S, gate.set)

        assert gate.is_set()
        assert consumer.subscriber.consumer is None, "a Kafka consumer was left open"
        assert service.lag is not None
        assert service.lag._task is None, "the lag task outlived the stop"
    finally:
        await delete_topics(kafka_bootstrap, [topics.actuators])
