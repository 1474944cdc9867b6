"""`discospace operation cancel` on the real broker, every service a process: the walk requests
nothing more, its measurements already running finish and land in the sample store, those
still queued are skipped ("operation cancelled"), and the operation completes cancelled once
they all landed, with counts equal to the projector's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementStarted,
    OperationCancelRequested,
    OperationCompleted,
    SamplesRequested,
)
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

LATENCY_S = 4.0
SLOW = {"experiments": [{"experiment": "benchmark"}], "latency_s": LATENCY_S, "invalid_when": None}
COUNTED = ("requested", "measured", "reused", "failed", "invalid", "cancelled")


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("cancel"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator("actuator-slow", "slow", SLOW, DISCOSPACE_ACTUATOR_CONCURRENCY="2")
        running.wait_healthy()
        running.wait_for_catalog({"benchmark"})
        yield running
    finally:
        running.stop()


def _space(loop: Loop) -> str:
    spec = {
        "sample_store": "store-cancel",
        "entity_space": [
            {"name": "model_name", "values": ["llama3-8b"]},
            {"name": "number_gpus", "values": [2, 4]},
            {"name": "batch_size", "values": [1, 2, 4, 8, 16, 32, 64, 128]},
        ],
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }
    path = loop.workdir / "space.yaml"
    path.write_text(yaml.safe_dump(spec))
    return loop.cli_ok("space", "create", "-f", str(path)).strip()


def _walk(loop: Loop, space_id: str) -> str:
    path: Path = loop.workdir / "walk.yaml"
    parameters = {"number_entities": "all", "batch_size": 4, "seed": 7}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    answer = loop.cli_ok("operation", "create", "-f", str(path), "--space", space_id)
    return answer.strip().splitlines()[0]


def _wait_started(loop: Loop, operation_id: str, count: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        events = loop.events(loop.topics.measurements, operation_id)
        if sum(isinstance(e, MeasurementStarted) for e in events) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"{operation_id}: {count} measurements never started: {loop.logs()}")


def _of(events: list[Event], kind: type[Event]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def test_a_cancelled_walk_lets_its_running_measurements_land_and_its_counts_agree(loop: Loop):
    space_id = _space(loop)
    operation_id = _walk(loop, space_id)
    _wait_started(loop, operation_id, 2)
    loop.cli_ok("operation", "cancel", operation_id, "--reason", "enough")
    shown = loop.wait_for_end(operation_id, timeout_s=120)

    measurements = loop.events(loop.topics.measurements, operation_id)
    operations = loop.events(loop.topics.operations, operation_id)
    started = {e.request_id for e in _of(measurements, MeasurementStarted)}
    landed = {e.request_id for e in _of(measurements, MeasurementCompleted)}
    failures = _of(measurements, MeasurementFailed)
    [end] = _of(operations, OperationCompleted)
    cancel_at = operations.index(_of(operations, OperationCancelRequested)[0])

    # Nothing asked for after the cancel; everything started landed, nothing started failed.
    assert _of(operations[cancel_at:], SamplesRequested) == []
    assert len(started) >= 2
    assert started <= landed, "a measurement running at the cancel did not land"
    assert {f.request_id for f in failures}.isdisjoint(started)
    assert {(f.reason, f.retryable) for f in failures} <= {("operation cancelled", False)}
    # The operation ended after its last measurement, cancelled, with nothing left in flight.
    assert end.stop_reason == "cancelled"
    assert end.stop_detail.startswith("cancelled by ")
    assert "cancelled (in flight)" not in end.stop_detail
    assert max(e.occurred_at for e in measurements) <= end.occurred_at
    # The landed measurements are in the sample store.
    stored = loop.cli_json("space", "show", space_id, "--include", "measured", "--format", "json")
    stored_entities = {row["entity_id"] for row in stored}
    landed_entities = {e.entity_id for e in _of(measurements, MeasurementCompleted)}
    assert landed_entities <= stored_entities
    # The explorer's counts (its end, as the summary says them) equal the projector's.
    reported = end.counts.model_dump()
    reported["cancelled"] = reported["requested"] - sum(
        reported[k] for k in ("measured", "reused", "failed")
    )
    projected = shown["counts"]
    assert {k: projected[k] for k in COUNTED} == {k: reported[k] for k in COUNTED}
    assert projected["measured"] == len(landed)
    assert projected["failed"] == len({f.request_id for f in failures})
    assert projected["cancelled"] == 0
    listed = loop.cli_json("operation", "list", "--space", space_id, "--json")
    [row] = [r for r in listed if r["operation_id"] == operation_id]
    assert {k: row["counts"][k] for k in COUNTED} == {k: projected[k] for k in COUNTED}
    assert json.dumps(shown["stop_detail"]) == json.dumps(end.stop_detail)
