"""Events the sampler tests feed it (a registered space, pools, requests and completions), and
the real broker for the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

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
    MeasurementCompleted,
    SamplesRequested,
    SpaceRegistered,
    TopicNames,
    measurement_request_id,
    new_event,
)
from discospace.runtime import Service
from discospace.runtime.provisioning import provision_topics
from discospace.testing.clients import EventClient
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


Kafka = EventClient


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
