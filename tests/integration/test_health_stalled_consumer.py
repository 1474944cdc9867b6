"""/health on the real broker: a consumer retrying one message is named (503) until the message
goes through (200 again); a consumer reading a backlog, or idle, stays healthy."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from discospace.events import ActuatorRegistered, TopicNames
from discospace.runtime import Service, ServiceSettings, create_service
from discospace.testing.kafka import create_topics

pytestmark = pytest.mark.integration


class Store:
    """A dependency of the handler that is down until the test brings it back."""

    def __init__(self, *, down: bool = False, pause_s: float = 0.0) -> None:
        self.down = down
        self.pause_s = pause_s
        self.failures = 0
        self.handled: list[str] = []

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        if self.down:
            self.failures += 1
            raise ConnectionError("the store did not answer")
        await asyncio.sleep(self.pause_s)
        self.handled.append(event.event_id)


def _service(bootstrap: str, topics: TopicNames, **settings: Any) -> Service:
    return create_service(
        ServiceSettings(kafka_bootstrap_servers=bootstrap, topic_prefix=topics.prefix, **settings),
        description="A probe whose handler depends on a store.",
    )


@asynccontextmanager
async def _health_of(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    """The running service, and an HTTP client of its /health."""
    transport = httpx.ASGITransport(app=service.app)
    client = httpx.AsyncClient(transport=transport, base_url="http://probe")
    async with service.app.start_lifespan_context(), client:
        yield client


async def _until_status(
    client: httpx.AsyncClient, status: int, timeout_s: float = 60.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = await client.get("/health")
        if answer.status_code == status:
            body: dict[str, Any] = answer.json()
            return body
        assert time.monotonic() < deadline, f"/health never {status}: {answer.text}"
        await asyncio.sleep(0.1)


def _stalled_gauge(service: Service, group: str, topic: str) -> float | None:
    labels = {"group": group, "topic": topic}
    return service.metrics.registry.get_sample_value("discospace_consumer_stalled", labels)


async def test_a_consumer_retrying_one_message_is_named_by_health_until_the_message_goes_through(
    kafka, kafka_bootstrap, topics, make_catalog
):
    store = Store(down=True)
    service = _service(kafka_bootstrap, topics, retry_backoff_s=0.1, stall_failures=5)
    service.consumer(topics.actuators)(store.on_actuator_registered)
    group = f"{topics.prefix}.service"
    event = make_catalog()

    async with _health_of(service) as health:
        await _until_status(health, 200)  # the broker connects just after the start
        await kafka.publish(event, topics=topics)
        stalled = await _until_status(health, 503)
        gauge_while_stalled = _stalled_gauge(service, group, topics.actuators)
        store.down = False
        healthy = await _until_status(health, 200)

    [stall] = stalled["stalled"]
    assert (stalled["status"], stalled["kafka"]) == ("stalled", "connected")
    assert (stall["group"], stall["topic"]) == (group, topics.actuators)
    assert stall["reason"].startswith(f"the message at offset {stall['offset']} failed 6 times")
    assert stall["reason"].endswith("(last error: ConnectionError: the store did not answer)")
    assert gauge_while_stalled == 1
    assert healthy == {"service": "service", "status": "ok", "kafka": "connected"}
    assert store.handled == [event.event_id]
    assert _stalled_gauge(service, group, topics.actuators) == 0


async def test_a_consumer_reading_a_backlog_and_then_idle_is_never_stalled(
    kafka, kafka_bootstrap, topics, make_catalog
):
    await create_topics(kafka_bootstrap, {topics.actuators: 1})
    await kafka.publish(*(make_catalog(f"worker-{n}") for n in range(400)), topics=topics)
    store = Store(pause_s=0.02)  # 400 messages: about 8 s, longer than a stall and a lag pass
    service = _service(kafka_bootstrap, topics, stall_after_s=2.0)
    service.consumer(topics.actuators)(store.on_actuator_registered)
    service.follow(topics.spaces)(store.on_actuator_registered)
    answers: list[str] = []

    async with _health_of(service) as health:
        await _until_status(health, 200)  # the broker connects just after the start
        deadline = time.monotonic() + 60
        while len(store.handled) < 400 and time.monotonic() < deadline:
            answers.append((await health.get("/health")).text)
            await asyncio.sleep(0.1)
        await asyncio.sleep(12)  # idle: two lag passes at lag 0 after the stall time
        answers.append((await health.get("/health")).text)
        assert service.lag is not None
        lags = await service.lag.measure()

    assert len(store.handled) == 400
    assert lags[(f"{topics.prefix}.service", topics.actuators)] == 0
    assert len(answers) > 50
    assert set(answers) == {'{"service": "service", "status": "ok", "kafka": "connected"}'}
    assert service.stalls.stalls() == []
