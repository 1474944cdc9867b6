"""A pipeline survives a SIGKILL of its explorer during the execute stage: every service as its
own process on the real broker and chDB, a synthetic actuator slow enough (0.3 s a
measurement) to be caught mid-search. A new explorer process folds the log and goes on; the
event log shows that no job ran twice: each child operation requested once, each job started
once, each (entity, experiment) measured once.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementStarted,
    OperationCompleted,
    OperationRequested,
    PipelineJobStarted,
)
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

POOL = "slow"
ACTUATOR = {
    "experiments": [{"experiment": "benchmark", "optional_properties": {"steps": 10}}],
    "latency_s": 0.3,
}
SPACE = {
    "sample_store": "pipeline-restart",
    "entity_space": [
        {"name": "number_gpus", "values": [2, 4]},
        {"name": "model_max_length", "values": [512, 1024, 2048, 4096, 8192]},
        {"name": "batch_size", "values": [1, 2, 4, 8, 16, 32, 64, 128]},
    ],
    "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
}
OBJECTIVE = {"property": "throughput", "direction": "max"}
# The hardware example's shape (examples/pipelines/hardware.yaml) on the synthetic actuator.
PIPELINE = {
    "operator": "pipeline",
    "parameters": {"seed": 3, "objective": OBJECTIVE},
    "stages": {
        "probe": [
            {
                "name": "probe",
                "kind": "operation",
                "operator": "random_walk",
                "parameters": {"number_entities": 12, "batch_size": 2},
            }
        ],
        "refine": [
            {"name": "pruned", "kind": "hook", "hook": "prune_invalid", "args": {"job": "probe"}},
            {
                "name": "narrowed",
                "kind": "hook",
                "hook": "k_sigma",
                "args": {"job": "probe", "space": "${pruned.space_id}", "objective": OBJECTIVE},
            },
        ],
        "execute": [
            {
                "name": "search",
                "kind": "operation",
                "space": "${narrowed.space_id}",
                "operator": "optuna_tpe",
                "parameters": {"number_entities": 12, "batch_size": 1},
            },
            {
                "name": "top",
                "kind": "hook",
                "hook": "top_k",
                "args": {"job": "search", "k": 3, "objective": OBJECTIVE},
            },
        ],
        "evaluate": [
            {
                "name": "longer",
                "kind": "measure",
                "entities": "${top.entities}",
                "experiment": {
                    "actuator": "synthetic",
                    "experiment": "benchmark",
                    "parameterization": {"steps": 50},
                },
            }
        ],
    },
}
JOBS = ["probe", "pruned", "narrowed", "search", "top", "longer"]


@pytest.fixture
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("pipeline-restart"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator("actuator-slow", POOL, ACTUATOR)
        running.wait_healthy()
        running.wait_for_catalog({"benchmark"})
        yield running
    finally:
        running.stop()


def child_progress(loop: Loop, operation_id: str) -> dict[str, Any] | None:
    answer = loop.cli("operation", "show", operation_id, "--json")
    return dict(json.loads(answer.stdout)) if answer.returncode == 0 else None


def wait_mid_search(loop: Loop, search_id: str, timeout_s: float = 120) -> dict[str, Any]:
    """The search child's progress once it measured 2 entities and is still running."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        progress = child_progress(loop, search_id)
        if progress is not None and progress["counts"]["measured"] >= 2:
            return progress
        time.sleep(0.2)
    raise AssertionError(f"{search_id} never measured 2 entities: {loop.logs()}")


def once_each(counts: Counter[Any]) -> dict[Any, int]:
    """The keys counted more than once (none, when nothing ran twice)."""
    return {key: count for key, count in counts.items() if count != 1}


def test_a_sigkilled_explorer_during_execute_is_replaced_and_no_job_runs_twice(loop: Loop):
    space_file = loop.workdir / "space.yaml"
    space_file.write_text(yaml.safe_dump(SPACE))
    pipeline_file = loop.workdir / "pipeline.yaml"
    pipeline_file.write_text(yaml.safe_dump(PIPELINE))
    space_id = loop.cli_ok("space", "create", "-f", str(space_file)).strip()
    operation_id = loop.cli_ok(
        "operation", "create", "-f", str(pipeline_file), "--space", space_id
    ).strip()

    mid = wait_mid_search(loop, f"{operation_id}-search")
    killed = loop.services["explorer"].process
    loop.kill("explorer")
    loop.restart("explorer")
    progress = loop.wait_for_end(operation_id, timeout_s=240)

    operations = loop.events(loop.topics.operations)
    measurements = loop.events(loop.topics.measurements)
    children = [e for e in of(operations, OperationRequested) if e.parent_operation_id]
    started = [e for e in of(operations, PipelineJobStarted) if e.operation_id == operation_id]
    ends = [e for e in of(operations, OperationCompleted) if e.operation_id == operation_id]
    calls = Counter((e.entity_id, e.experiment_id) for e in of(measurements, MeasurementStarted))
    results = Counter(
        (e.entity_id, e.experiment_id) for e in of(measurements, MeasurementCompleted)
    )
    longer = [e for e in of(measurements, MeasurementCompleted) if e.experiment_id.endswith("50")]

    assert mid["status"] == "running", "the explorer was killed during the search"
    assert killed is not None
    assert killed.returncode == -9, "killed by SIGKILL"
    assert loop.services["explorer"].process is not killed, "a new explorer process"
    assert progress["status"] == "completed", progress
    assert [e.stop_reason for e in ends] == ["operator_finished"]
    assert [e.job for e in started] == JOBS
    # Each child is keyed by its own id: the topic's partitions do not keep their order.
    assert sorted(e.operation_id for e in children) == [
        f"{operation_id}-{job}" for job in ("longer", "probe", "search")
    ]
    assert {e.parent_operation_id for e in children} == {operation_id}
    assert once_each(Counter(e.operation_id for e in children)) == {}
    assert once_each(Counter(e.job for e in started)) == {}
    assert calls, "the actuator measured something"
    assert once_each(calls) == {}, "an actuator call was made twice"
    assert once_each(results) == {}, "a measurement was completed twice"
    assert set(calls) == set(results)
    assert len(longer) == 3
    assert {e.experiment_id for e in longer} == {"benchmark-steps.50"}


def of(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]
