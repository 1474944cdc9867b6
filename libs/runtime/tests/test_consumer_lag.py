"""Consumer lag per group and topic, and the series every service lists at zero from its start."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from discospace.events import ActuatorRegistered, TopicNames
from discospace.runtime import Service, ServiceSettings, create_service
from discospace.runtime.metrics import DEAD_LETTER_REASON_KINDS
from discospace.testing.clients import EventClient
from discospace.testing.kafka import create_topics, delete_topics
from discospace.testing.waiting import eventually


def _lag(service: Service, group: str, topic: str) -> float | None:
    labels = {"group": group, "topic": topic}
    return service.metrics.registry.get_sample_value("discospace_consumer_lag", labels)


class Gate:
    """A handler that holds each message until the test opens the gate."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.handled: list[str] = []
        self.holding = 0

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        self.holding += 1
        await self.opened.wait()
        self.handled.append(event.event_id)


def _service(topics: TopicNames, bootstrap: str = "127.0.0.1:1", **settings: Any) -> Service:
    return create_service(
        ServiceSettings(kafka_bootstrap_servers=bootstrap, topic_prefix=topics.prefix, **settings),
        description="A probe with a group consumer and a follower.",
    )


async def test_every_topic_a_consumer_names_shows_a_lag_of_zero_before_any_partition_is_assigned(
    topics,
):
    service = _service(topics)
    service.consumer(topics.actuators)(Gate().on_actuator_registered)
    service.follow(topics.spaces)(Gate().on_actuator_registered)
    assert service.lag is not None

    lags = await service.lag.measure()

    assert lags == {
        (f"{topics.prefix}.service", topics.actuators): 0,
        ("service (no group)", topics.spaces): 0,
    }
    assert _lag(service, f"{topics.prefix}.service", topics.actuators) == 0


def test_every_reason_a_message_can_be_dead_lettered_for_is_counted_from_zero(topics):
    registry = _service(topics).metrics.registry

    counts = {
        kind: registry.get_sample_value("discospace_dead_lettered_total", {"reason_kind": kind})
        for kind in DEAD_LETTER_REASON_KINDS
    }

    assert counts == dict.fromkeys(
        ("malformed", "unknown_type", "unsupported_version", "invalid", "handler_failed"), 0
    )


@pytest.fixture
async def one_partition(kafka_bootstrap: str, topics: TopicNames) -> AsyncIterator[TopicNames]:
    await create_topics(kafka_bootstrap, {topics.actuators: 1})
    yield topics
    await delete_topics(kafka_bootstrap, topics.fixed())


@pytest.mark.integration
async def test_the_lag_of_a_group_is_what_it_has_not_read_and_falls_to_zero_once_it_has(
    kafka_bootstrap, one_partition, make_announcement
):
    topics, gate = one_partition, Gate()
    service = _service(topics, kafka_bootstrap, retry_backoff_s=0)
    service.consumer(topics.actuators)(gate.on_actuator_registered)
    group = f"{topics.prefix}.service"
    assert service.lag is not None

    async with service.app.start_lifespan_context():
        await EventClient(kafka_bootstrap).publish(
            *(make_announcement(f"worker-{n}") for n in range(5)), topics=topics
        )
        await eventually(lambda: gate.holding == 1, 30.0)
        holding_the_first = await service.lag.measure()
        gate.opened.set()
        await eventually(lambda: len(gate.handled) == 5, 30.0)
        read_all = await service.lag.measure()

    assert holding_the_first[(group, topics.actuators)] == 4
    assert read_all[(group, topics.actuators)] == 0
    assert _lag(service, group, topics.actuators) == 0
