"""A probe service for the runtime's tests: one consumer of actuator announcements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from faststream.message import StreamMessage

from discospace.events import ActuatorRegistered, Event, TopicNames, decode, new_event
from discospace.runtime import Service, ServiceSettings, create_service

AT = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)


def fixed_clock() -> datetime:
    return AT


def announcement(worker: str = "worker-1") -> ActuatorRegistered:
    return new_event(
        ActuatorRegistered,
        fixed_clock,
        actuator="probe",
        pool="p1",
        experiments=(),
        worker_id=worker,
    )


async def event_of(message: StreamMessage[Any]) -> Event:
    """A decoder for test subscribers that read what a service published."""
    return decode(message.body)


@dataclass
class Probe:
    """A service whose handler records what it handled and fails when told to."""

    service: Service
    handled: list[ActuatorRegistered] = field(default_factory=list)
    dead_letters: list[Event] = field(default_factory=list)
    failures_left: int = 0


def make_probe(topics: TopicNames, **overrides: Any) -> Probe:
    settings = ServiceSettings(topic_prefix=topics.prefix, **({"retry_backoff_s": 0} | overrides))
    probe = Probe(create_service(settings, description="A probe.", clock=fixed_clock))

    @probe.service.consumer(topics.actuators)
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        if probe.failures_left:
            probe.failures_left -= 1
            raise ConnectionError("the store did not answer")
        probe.handled.append(event)

    @probe.service.broker.subscriber(topics.dead_letter, decoder=event_of)
    async def collect(event: Event) -> None:
        probe.dead_letters.append(event)

    return probe


@pytest.fixture
def topics() -> TopicNames:
    return TopicNames.unique("runtime")


@pytest.fixture
def probe(topics: TopicNames) -> Probe:
    return make_probe(topics)


@pytest.fixture
def make_announcement() -> Callable[..., ActuatorRegistered]:
    return announcement


def sample(service: Service, name: str, **labels: str) -> float:
    """The current value of one metric of the service's registry (0 when absent)."""
    value = service.metrics.registry.get_sample_value(name, labels)
    return value or 0.0


@pytest.fixture
def metric() -> Callable[..., float]:
    return sample
