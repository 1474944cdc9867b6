"""Requests the actuator tests send a worker, a fixed clock, and the real broker for the
integration tests (workers in this process, or as processes).

This folder is put on `sys.path`, so `isolation_plugins` (test plugins that run in child
processes) imports by one name here, in the fork server's children and in worker processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from discospace.core import Entity, ExperimentRef
from discospace.events import (
    MeasurementRequested,
    OperationCancelRequested,
    OperationCompleted,
    TopicNames,
    measurement_request_id,
    new_event,
)
from discospace.events.operations import OperationCounts
from discospace.runtime import Service
from discospace.runtime.provisioning import provision_topics
from discospace.testing.clients import EventClient
from discospace.testing.kafka import delete_topics, free_port

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parents[2]
POOL = "p1"

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

AT = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)


def fixed_clock() -> datetime:
    return AT


def request(
    values: dict[str, Any] | None = None,
    *,
    experiment: str = "benchmark",
    parameterization: dict[str, Any] | None = None,
    attempt: int = 1,
    pool: str = "p1",
    operation: str = "op-1",
    inputs: dict[str, Any] | None = None,
    actuator: str = "synthetic",
) -> MeasurementRequested:
    entity = Entity.of(values or {"batch_size": 8, "model_max_length": 1024})
    ref = ExperimentRef(
        actuator=actuator, experiment=experiment, parameterization=parameterization or {}
    )
    experiment_id = experiment + "".join(
        f"-{k}.{v}" for k, v in sorted((parameterization or {}).items())
    )
    return new_event(
        MeasurementRequested,
        fixed_clock,
        operation_id=operation,
        request_id=measurement_request_id(operation, entity.id, experiment_id),
        space_id="space-000000000000",
        sample_store="store-a",
        entity_id=entity.id,
        entity_values=entity.as_dict(),
        experiment_id=experiment_id,
        experiment=ref,
        pool=pool,
        attempt=attempt,
        inputs=inputs or {},
    )


def cancel(operation: str = "op-1") -> OperationCancelRequested:
    """Someone cancels `operation`."""
    return new_event(
        OperationCancelRequested, fixed_clock, operation_id=operation, requested_by="alice"
    )


def completion(
    operation: str = "op-1", stop_reason: str = "max_measurements"
) -> OperationCompleted:
    """The explorer completes `operation` for `stop_reason`."""
    counts = OperationCounts(requested=4, measured=2, reused=0, failed=0, invalid=0)
    return new_event(
        OperationCompleted,
        fixed_clock,
        operation_id=operation,
        space_id="space-000000000000",
        stop_reason=stop_reason,
        counts=counts,
    )


@pytest.fixture
def clock() -> Callable[[], datetime]:
    return fixed_clock


@pytest.fixture
def make_request() -> Callable[..., MeasurementRequested]:
    return request


@pytest.fixture
def make_cancel() -> Callable[..., OperationCancelRequested]:
    return cancel


@pytest.fixture
def make_completion() -> Callable[..., OperationCompleted]:
    return completion


@pytest.fixture
def topics() -> TopicNames:
    return TopicNames.unique("actuator")


Kafka = EventClient


@pytest.fixture
async def kafka(kafka_bootstrap: str, topics: TopicNames) -> AsyncIterator[Kafka]:
    """The broker, with this test's topics created first (3 partitions) and deleted after."""
    names = [*topics.fixed(), topics.measure(POOL)]
    await provision_topics(kafka_bootstrap, names, topics, partitions=3)
    yield Kafka(kafka_bootstrap)
    await delete_topics(kafka_bootstrap, names)


@asynccontextmanager
async def running(service: Service) -> AsyncIterator[Service]:
    """Run `service` in this process: startup hooks, broker connected, consumers started."""
    async with service.app.start_lifespan_context():
        yield service


@pytest.fixture
def run_service() -> Callable[[Service], Any]:
    return running


@pytest.fixture
def worker_process(
    kafka_bootstrap: str, topics: TopicNames, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Factory: `python -m discospace.actuator` on this test's topics; killed after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(worker_id: str, **env: str) -> subprocess.Popen[bytes]:
        environment = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "DISCOSPACE_TOPIC_PREFIX": topics.prefix,
            "DISCOSPACE_ACTUATOR_HTTP_PORT": str(free_port()),
            "DISCOSPACE_ACTUATOR_POOL": POOL,
            "DISCOSPACE_ACTUATOR_WORKER_ID": worker_id,
            **env,
        }
        with (tmp_path / f"{worker_id}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "discospace.actuator"],
                cwd=REPO,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()
