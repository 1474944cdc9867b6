"""One cross-space warm Optuna job: the same decisions in process and through the services.

A random walk measures every point of space A (batch sizes 1-8) through the services; then
`optuna_tpe` searches space B (batch sizes 16-128, same store) with the same seed, so A's
results are outside B (`store_elsewhere`) and choose its start (`optuna_search/transfer.py`).
In process, the same job runs with A's results, as the services measured them, in the store
beforehand: with `batch_size` 1 both must ask for the same entities in the same order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiokafka import AIOKafkaConsumer

from discospace.bench.harness import Measured, Prior, run_operation, space_event
from discospace.core import Entity, InvalidMeasurement, ValidMeasurement, load_space_spec
from discospace.events import MeasurementCompleted, OperationParameters, decode
from discospace.testing.loop import Loop

from .test_identical_decisions import ACTUATOR, POOL, decisions, register

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def services(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("cross-space"))
    try:
        for name in ("registry", "explorer", "sampler", "projector"):
            running.start(name)
        running.actuator("actuator-tpe", POOL, ACTUATOR)
        running.wait_healthy()
        yield running
    finally:
        running.stop()


COMMON = [
    {"name": "number_gpus", "values": [2, 4]},
    {"name": "model_max_length", "values": [512, 1024, 2048, 4096, 8192]},
]
SMALL_BATCHES = [1, 2, 4, 8]
LARGE_BATCHES = [16, 32, 64, 128]
WARM: dict[str, Any] = {
    "batch_size": 1,
    "seed": 11,
    "objective": {"property": "throughput", "direction": "max"},
    "stopping": {"max_measurements": 10},
}


def space_file(folder: Path, name: str, batches: list[int]) -> Path:
    path = folder / f"{name}.yaml"
    spec = {
        "sample_store": "store-cross-space",
        "entity_space": [*COMMON, {"name": "batch_size", "values": batches}],
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def create_operation(loop: Loop, space_id: str, operator: str, parameters: dict[str, Any]) -> str:
    path = loop.workdir / f"{operator}-{space_id[:8]}.yaml"
    path.write_text(yaml.safe_dump({"operator": operator, "parameters": parameters}))
    answer = loop.cli("operation", "create", "-f", str(path), "--space", space_id)
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return answer.stdout.strip()


async def measured(loop: Loop, operation_id: str, count: int) -> list[MeasurementCompleted]:
    """The operation's first `count` results from the measurements topic, by (occurred_at,
    event id): the order the explorer's store keeps them in."""
    consumer = AIOKafkaConsumer(
        loop.topics.measurements, bootstrap_servers=loop.bootstrap, auto_offset_reset="earliest"
    )
    found: dict[str, MeasurementCompleted] = {}
    try:
        await consumer.start()
        deadline = time.monotonic() + 60
        while len(found) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    event = decode(record.value)
                    if (
                        isinstance(event, MeasurementCompleted)
                        and event.operation_id == operation_id
                    ):
                        found[event.event_id] = event
    finally:
        await consumer.stop()
    assert len(found) == count, f"{len(found)} of {count} results: {loop.logs()}"
    return sorted(found.values(), key=lambda e: (e.occurred_at, e.event_id))


def prior_of(event: MeasurementCompleted) -> Prior:
    result = (
        ValidMeasurement(values=dict(event.values))
        if event.is_valid
        else InvalidMeasurement(reason=event.invalid_reason or "invalid")
    )
    return Prior(dict(event.entity_values), event.experiment_id, Measured(result))


def test_a_warm_cross_space_tpe_job_decides_the_same_in_process_and_through_the_services(
    services: Loop,
):
    loop = services
    first = register(loop, space_file(loop.workdir, "space-a", SMALL_BATCHES))
    walk = create_operation(loop, first, "random_walk", {"batch_size": 4, "seed": 3})
    asyncio.run(decisions(loop, walk))
    earlier = asyncio.run(measured(loop, walk, 2 * 5 * len(SMALL_BATCHES)))
    path = space_file(loop.workdir, "space-b", LARGE_BATCHES)
    second = register(loop, path)
    job = create_operation(loop, second, "optuna_tpe", WARM)
    through_services = asyncio.run(decisions(loop, job))

    in_process = requested_with_prior(path, [prior_of(e) for e in earlier])
    cold = requested_with_prior(path, [])

    assert len(in_process) == 10
    assert through_services == in_process
    assert in_process[:3] != cold[:3], "the other space's results chose the start"


def requested_with_prior(path: Path, prior: list[Prior]) -> list[str]:
    from discospace.actuator.synthetic import SyntheticActuator, SyntheticParameters

    actuator = SyntheticActuator(SyntheticParameters.model_validate(ACTUATOR))
    measure = _measure_with(actuator)
    space = space_event(load_space_spec(path), actuator.catalog())
    parameters = OperationParameters.model_validate(WARM)
    record = run_operation(space, "optuna_tpe", parameters, measure, prior=prior)
    return [Entity.of(point).id for point in record.requested]


def _measure_with(actuator: Any) -> Any:
    from discospace.actuator.plugin import MeasurementTask

    def measure(entity: Entity, experiment: Any) -> Measured:
        result = asyncio.run(actuator.measure(MeasurementTask("in-process", entity, experiment)))
        return Measured(result)

    return measure
