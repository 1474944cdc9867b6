"""``discospace store import`` end to end: every service as a process, the real broker, chDB.

A CSV of measurements made elsewhere is imported into a space's sample store. The projector
shows them as measured in that space (and as measured elsewhere in a space sharing the store);
random walks over those entities, through the services, reuse every one of them and never call
the actuator; importing the file again publishes nothing.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Iterator
from itertools import product
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.events import MeasurementCompleted
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

POOL = "imported"
EXPERIMENT = "benchmark"
BATCH_SIZES = [1, 2, 4, 8, 16]
GPUS = [1, 2]
MODELS = ["llama-7b", "granite-8b"]
STORE = "store-imported"
INVALID = {(16, 1, "llama-7b"), (16, 1, "granite-8b")}
"""Configurations the file records as out of memory."""
ACTUATOR = {"experiments": [{"experiment": EXPERIMENT}], "latency_s": 0.01, "invalid_when": None}


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("store-import"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator("actuator-imported", POOL, ACTUATOR)
        running.wait_healthy()
        running.wait_for_catalog({EXPERIMENT})
        yield running
    finally:
        running.stop()


def create_space(loop: Loop, name: str, batch_sizes: list[int]) -> str:
    spec = {
        "sample_store": STORE,
        "entity_space": [
            {"name": "batch_size", "values": batch_sizes},
            {"name": "number_gpus", "values": GPUS},
            {"name": "model_name", "values": MODELS},
        ],
        "measurement_space": [{"actuator": "synthetic", "experiment": EXPERIMENT}],
    }
    path = loop.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return loop.cli_ok("space", "create", "-f", str(path)).strip()


def measurements_file(path: Path) -> int:
    """Every configuration of the space as a row, under the lab's own column names."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["bs", "number_gpus", "model_name", "throughput", "is_valid", "reason"])
        for bs, gpus, model in product(BATCH_SIZES, GPUS, MODELS):
            invalid = (bs, gpus, model) in INVALID
            throughput = "" if invalid else f"{100.0 * bs * gpus:.1f}"
            reason = "CUDA out of memory" if invalid else ""
            writer.writerow([bs, gpus, model, throughput, not invalid, reason])
    return len(BATCH_SIZES) * len(GPUS) * len(MODELS)


def import_file(loop: Loop, path: Path, space_id: str) -> dict[str, Any]:
    return dict(
        loop.cli_json(
            "store",
            "import",
            str(path),
            "--space",
            space_id,
            "--experiment",
            EXPERIMENT,
            "--map",
            "bs=batch_size",
            "--map",
            "reason=invalid_reason",
            "--note",
            "runs of the lab's A100 rig",
            "--json",
        )
    )


def rows(loop: Loop, space_id: str, include: str) -> list[dict[str, Any]]:
    return list(loop.cli_json("space", "show", space_id, "--include", include, "--format", "json"))


def wait_for_rows(loop: Loop, space_id: str, include: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while len(found := rows(loop, space_id, include)) < count:
        assert time.monotonic() < deadline, f"{len(found)} of {count} {include}: {loop.logs()}"
        time.sleep(0.3)
    return found


def walk(loop: Loop, space_id: str) -> dict[str, Any]:
    path = loop.workdir / "walk.yaml"
    parameters = {"number_entities": "all", "batch_size": 4}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    operation_id = loop.cli_ok("operation", "create", "-f", str(path), "--space", space_id)
    return loop.wait_for_end(operation_id.strip().splitlines()[0])


def test_imported_measurements_are_reused_by_every_space_of_the_store_and_imported_once(
    loop: Loop,
) -> None:
    space_id = create_space(loop, "imported", BATCH_SIZES)
    sharing_id = create_space(loop, "sharing", BATCH_SIZES[:2])
    path = loop.workdir / "lab-runs.csv"
    count = measurements_file(path)

    first = import_file(loop, path, space_id)
    measured = wait_for_rows(loop, space_id, "measured", count - len(INVALID))
    elsewhere = wait_for_rows(loop, sharing_id, "elsewhere", 2 * len(GPUS) * len(MODELS))
    walked = walk(loop, space_id)
    shared = walk(loop, sharing_id)
    again = import_file(loop, path, space_id)

    assert (first["rows_read"], first["imported"], first["refused"]) == (count, count, 0)
    assert (first["imported_valid"], first["imported_invalid"]) == (count - len(INVALID), 2)
    by_batch = {(r["batch_size"], r["number_gpus"], r["model_name"]): r for r in measured}
    assert by_batch[(4, 2, "llama-7b")]["throughput"] == 800.0
    assert {r["status"] for r in elsewhere} == {"elsewhere"}
    for progress, size in ((walked, count), (shared, len(elsewhere))):
        assert progress["status"] == "completed", progress
        counts = progress["counts"]
        assert (counts["requested"], counts["reused"], counts["measured"]) == (size, size, 0)
        assert (counts["failed"], counts["in_flight"]) == (0, 0)
    assert loop.events(loop.topics.measure(POOL)) == []
    assert loop.services["actuator-imported"].metric("discospace_actuator_calls_total") == 0
    assert (again["imported"], again["already_in_store"]) == (0, count)
    completed = [
        e for e in loop.events(loop.topics.measurements) if isinstance(e, MeasurementCompleted)
    ]
    assert len(completed) == count
    assert all(e.provenance and e.provenance.sha256 == first["sha256"] for e in completed)
