"""Events the sampler tests feed it (a registered space, pools, requests and completions), and
the real broker for the integration tests."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.core import (
    DiscoverySpace,
    ExperimentRef,
    ExperimentSpec,
    PropertySpec,
    SpaceSpec,
    entity_id,
)
from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementCompleted,
    SamplesRequested,
    SpaceRegistered,
    TopicNames,
    decode,
    encode,
    measurement_request_id,
    new_event,
)
from discospace.runtime import Service
from discospace.runtime.provisioning import provision_topics
from discospace.testing.kafka import delete_topics

AT = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
STORE = "store-a"
OPERATION = "op-1"

BENCH = ExperimentSpec(
    actuator="synthetic",
    experiment="bench",
    target_properties=("throughput",),
    required_properties=("batch_size",),
    optional_properties={"steps": 10},
)
PROFILE = ExperimentSpec(
    actuator="synthetic",
    experiment="profile",
    target_properties=("memory",),
    required_properties=("batch_size",),
)


def fixed_clock() -> datetime:
    return AT


def space_spec(store: str = STORE, batch_sizes: tuple[int, ...] = (1, 2, 4, 8)) -> SpaceSpec:
    return SpaceSpec(
        sample_store=store,
        entity_space=(
            PropertySpec(name="batch_size", values=batch_sizes),
            PropertySpec(name="gpu_model", values=("A100", "H100")),
        ),
        measurement_space=(ExperimentRef(actuator="synthetic", experiment="bench"),),
    )


def registered(spec: SpaceSpec | None = None) -> SpaceRegistered:
    spec = spec or space_spec()
    return new_event(
        SpaceRegistered,
        fixed_clock,
        submission_id="sub-1",
        space_id=DiscoverySpace.from_spec(spec).id,
        spec=spec,
        experiments=(BENCH, PROFILE),
    )


def pool(name: str, gpu_model: str | None = None, *specs: ExperimentSpec) -> ActuatorRegistered:
    return new_event(
        ActuatorRegistered,
        fixed_clock,
        actuator="synthetic",
        pool=name,
        experiments=specs or (BENCH, PROFILE),
        gpu_model=gpu_model,
        worker_id=f"{name}-w0",
    )


def request(space: SpaceRegistered, **fields: Any) -> SamplesRequested:
    values: dict[str, Any] = {
        "operation_id": OPERATION,
        "space_id": space.space_id,
        "request_index": 0,
        "count": 3,
        "strategy": "random",
        "seed": 7,
        "experiments": (ExperimentRef(actuator="synthetic", experiment="bench"),),
    }
    values.update(fields)
    if "points" in fields:
        values.update(count=None, strategy=None)
    return new_event(SamplesRequested, fixed_clock, **values)


def completed(
    entity: dict[str, Any],
    *,
    store: str = STORE,
    operation: str = "op-earlier",
    experiment: str = "bench",
    valid: bool = True,
    minutes: int = 0,
    values: dict[str, Any] | None = None,
) -> MeasurementCompleted:
    eid = entity_id(entity)
    return new_event(
        MeasurementCompleted,
        lambda: AT - timedelta(minutes=60 - minutes),
        operation_id=operation,
        request_id=measurement_request_id(operation, eid, experiment),
        space_id="space-000000000000",
        sample_store=store,
        entity_id=eid,
        entity_values=entity,
        experiment_id=experiment,
        worker_id="w0",
        values=values if values is not None else ({"throughput": 12.5} if valid else {}),
        is_valid=valid,
        invalid_reason=None if valid else "out of memory",
        uncertainty={},
        duration_seconds=1.0,
    )


@pytest.fixture
def clock() -> Callable[[], datetime]:
    return fixed_clock


@pytest.fixture
def make() -> Any:
    """The event builders above, as one namespace (conftest modules are not importable)."""

    class Make:
        space_spec = staticmethod(space_spec)
        registered = staticmethod(registered)
        pool = staticmethod(pool)
        request = staticmethod(request)
        completed = staticmethod(completed)
        bench = BENCH
        profile = PROFILE
        store = STORE
        operation = OPERATION
        at = AT

    return Make


@pytest.fixture
def topics() -> TopicNames:
    return TopicNames.unique("sampler")


class Kafka:
    """Plain aiokafka clients on the real broker: what any outside producer or reader does."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    async def publish(self, *events: Event, topics: TopicNames) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap)
        await producer.start()
        try:
            for event in events:
                await producer.send_and_wait(event.topic(topics), encode(event), key=event.key())
        finally:
            await producer.stop()

    async def read(self, topic: str, settle_s: float = 2.0, at_least: int = 0) -> list[Event]:
        """Every event `topic` holds: at least `at_least`, then until `settle_s` brings none."""
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=self.bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        events: list[Event] = []
        deadline = time.monotonic() + 60
        quiet_since = time.monotonic()
        try:
            while time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=200)
                records = [record for part in batch.values() for record in part]
                events += [decode(record.value) for record in records]
                if records:
                    quiet_since = time.monotonic()
                elif len(events) >= at_least and time.monotonic() - quiet_since > settle_s:
                    break
        finally:
            await consumer.stop()
        return events


@pytest.fixture
async def kafka(kafka_bootstrap: str, topics: TopicNames) -> AsyncIterator[Kafka]:
    """The broker, with this test's fixed topics created first and deleted after."""
    await provision_topics(kafka_bootstrap, topics.fixed(), topics, partitions=3)
    yield Kafka(kafka_bootstrap)
    await delete_topics(kafka_bootstrap, [*topics.fixed(), *(topics.measure(p) for p in POOLS)])


POOLS = ("a100", "h100")


@asynccontextmanager
async def running(service: Service) -> AsyncIterator[Service]:
    """Run `service` in this process: startup hooks, broker connected, consumers started."""
    async with service.app.start_lifespan_context():
        yield service


@pytest.fixture
def run_service() -> Callable[[Service], Any]:
    return running
