"""One seed, one sequence of decisions: an optimizer in process and through the services.

`optuna_tpe` runs twice on the same space with the same seed: in process (the explorer's engine
with the synthetic actuator's measurements played by `discospace.bench.harness`) and
through every service as its own process on the real broker (the synthetic actuator as a
worker). With `batch_size` 1 the results arrive in one order, so both must ask for the same
entities in the same order.
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

from discospace.actuator.plugin import MeasurementTask
from discospace.actuator.synthetic import SyntheticActuator, SyntheticParameters
from discospace.bench.harness import Measured, run_operation, space_event
from discospace.core import Entity, ParameterizedExperiment, load_space_spec
from discospace.events import (
    OperationCompleted,
    OperationFailed,
    OperationParameters,
    SamplesRequested,
    decode,
)
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

POOL = "tpe"
ACTUATOR = {"experiments": [{"experiment": "benchmark"}], "latency_s": 0.0, "seed": 5}
ENTITY_SPACE = [
    {"name": "number_gpus", "values": [2, 4]},
    {"name": "model_max_length", "values": [512, 1024, 2048, 4096, 8192]},
    {"name": "batch_size", "values": [1, 2, 4, 8, 16, 32, 64, 128]},
]
PARAMETERS: dict[str, Any] = {
    "batch_size": 1,
    "seed": 11,
    "objective": {"property": "throughput", "direction": "max"},
    "stopping": {"max_measurements": 16},
    "options": {"n_startup_trials": 5},
}


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("identical"))
    try:
        for name in ("registry", "explorer", "sampler", "projector"):
            running.start(name)
        running.actuator("actuator-tpe", POOL, ACTUATOR)
        running.wait_healthy()
        yield running
    finally:
        running.stop()


def space_file(folder: Path) -> Path:
    path = folder / "tpe-space.yaml"
    spec = {
        "sample_store": "store-identical",
        "entity_space": ENTITY_SPACE,
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def register(loop: Loop, path: Path, timeout_s: float = 60) -> str:
    """The space id, once the registry knows the actuator's catalog and accepts the space."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = loop.cli("space", "create", "-f", str(path))
        if answer.returncode == 0:
            return answer.stdout.strip()
        if time.monotonic() > deadline:
            raise AssertionError(answer.stderr + loop.logs())
        time.sleep(0.5)


async def decisions(loop: Loop, operation_id: str, timeout_s: float = 180) -> list[str]:
    """The entities the explorer requested for the operation, in order, once it ended."""
    consumer = AIOKafkaConsumer(
        loop.topics.operations, bootstrap_servers=loop.bootstrap, auto_offset_reset="earliest"
    )
    requested: dict[int, list[str]] = {}
    try:
        await consumer.start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    event = decode(record.value)
                    if getattr(event, "operation_id", None) != operation_id:
                        continue
                    if isinstance(event, OperationFailed):
                        raise AssertionError(event.reason)
                    if isinstance(event, OperationCompleted):
                        return [e for _, ids in sorted(requested.items()) for e in ids]
                    if isinstance(event, SamplesRequested):
                        ids = [Entity.of(point).id for point in event.points or ()]
                        requested[event.request_index] = ids
    finally:
        await consumer.stop()
    raise AssertionError(f"{operation_id} did not end in {timeout_s}s: {loop.logs()}")


def requested_in_process(path: Path) -> list[str]:
    actuator = SyntheticActuator(SyntheticParameters.model_validate(ACTUATOR))

    def measure(entity: Entity, experiment: ParameterizedExperiment) -> Measured:
        task = MeasurementTask("in-process", entity, experiment)
        result = asyncio.run(actuator.measure(task))
        assert not hasattr(result, "retryable"), "the synthetic actuator here never fails"
        return Measured(result)  # type: ignore[arg-type]

    space = space_event(load_space_spec(path), actuator.catalog())
    record = run_operation(
        space, "optuna_tpe", OperationParameters.model_validate(PARAMETERS), measure
    )
    return [Entity.of(point).id for point in record.requested]


@pytest.fixture(scope="module")
def operation_id(loop: Loop) -> str:
    """The operation through the services (run once for the module)."""
    path = space_file(loop.workdir)
    space_id = register(loop, path)
    operation = loop.workdir / "tpe-operation.yaml"
    operation.write_text(yaml.safe_dump({"operator": "optuna_tpe", "parameters": PARAMETERS}))
    answer = loop.cli("operation", "create", "-f", str(operation), "--space", space_id)
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return answer.stdout.strip()


def test_tpe_asks_for_the_same_entities_in_process_and_through_the_services(
    loop: Loop, operation_id: str
):
    services = asyncio.run(decisions(loop, operation_id))
    in_process = requested_in_process(space_file(loop.workdir))

    assert len(in_process) == 16
    assert services == in_process


def test_the_operation_is_plotted_from_the_projectors_results(loop: Loop, operation_id: str):
    asyncio.run(decisions(loop, operation_id))
    picture = loop.workdir / "tpe.png"

    answer = wait_for_plot(loop, operation_id, picture)

    assert answer.stdout.strip() == str(picture)
    assert picture.read_bytes().startswith(b"\x89PNG")


def wait_for_plot(loop: Loop, operation_id: str, picture: Path) -> Any:
    """The plot command's answer once the projector holds the operation's 16 results."""
    deadline = time.monotonic() + 60
    while True:
        shown = loop.cli("operation", "show", operation_id, "--json")
        if shown.returncode == 0 and '"measured":16' in shown.stdout.replace(" ", ""):
            break
        if time.monotonic() > deadline:
            raise AssertionError(shown.stdout + shown.stderr + loop.logs())
        time.sleep(0.5)
    answer = loop.cli("operation", "plot", operation_id, "-o", str(picture))
    assert answer.returncode == 0, answer.stderr
    return answer
