"""The discovery loop end to end: every service as its own process, the real broker, chDB.

One loop serves the whole module (starting it costs seconds); each test uses its own spaces and
sample stores, so tests see each other's work only where a test says they share a store.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from aiokafka import AIOKafkaProducer

from discospace.events import MeasurementCompleted, MeasurementRequested
from discospace.testing.loop import REPO, Loop

pytestmark = pytest.mark.integration

SEED_SHAPE: list[dict[str, Any]] = [
    {"name": "dataset_id", "values": ["news-tokens-16384plus-entries-4096"]},
    {"name": "model_name", "values": ["llama3-8b"]},
    {"name": "torch_dtype", "values": ["bfloat16"]},
    {"name": "gpu_model", "values": ["NVIDIA-A100-80GB-PCIe"]},
    {"name": "number_gpus", "values": [2, 4]},
    {"name": "model_max_length", "values": [512, 1024, 2048, 4096, 8192]},
    {"name": "batch_size", "values": [1, 2, 4, 8, 16, 32, 64, 128]},
]
CONSTITUTIVE = [p["name"] for p in SEED_SHAPE]
TARGETS = ["throughput", "peak_memory"]
STEADY = {"experiments": [{"experiment": "benchmark"}], "latency_s": 0.01, "invalid_when": None}
FLAKY = {
    "experiments": [{"experiment": "flaky-benchmark"}],
    "latency_s": 0.01,
    "failure_rate": 0.2,
    "seed": 3,
}
SLOW = {"experiments": [{"experiment": "slow-benchmark"}], "latency_s": 0.1, "invalid_when": None}


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("loop"))
    try:
        for name in ("registry", "sampler", "projector"):
            running.start(name)
        # Retries after 0.2 s (doubling) rather than 5 s, so the flaky walk ends quickly.
        running.start("explorer", DISCOSPACE_EXPLORER_MEASUREMENT_RETRY_BACKOFF_S="0.2")
        running.actuator("actuator-steady", "steady", STEADY)
        running.actuator("actuator-flaky", "flaky", FLAKY)
        running.actuator("actuator-slow", "slow", SLOW)
        running.wait_healthy()
        running.wait_for_catalog({"benchmark", "flaky-benchmark", "slow-benchmark"})
        yield running
    finally:
        running.stop()


def space_file(loop: Loop, name: str, store: str, experiment: str, **narrow: list[Any]) -> Path:
    entity_space = [
        {"name": p["name"], "values": narrow.get(p["name"], p["values"])} for p in SEED_SHAPE
    ]
    spec = {
        "sample_store": store,
        "entity_space": entity_space,
        "measurement_space": [{"actuator": "synthetic", "experiment": experiment}],
    }
    path = loop.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def create_space(loop: Loop, path: Path) -> str:
    answer = loop.cli("space", "create", "-f", str(path))
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return answer.stdout.strip()


def walk_file(loop: Loop, max_retries: int = 2, batch_size: int = 4) -> Path:
    path = loop.workdir / f"walk-{max_retries}-{batch_size}.yaml"
    parameters = {"number_entities": "all", "batch_size": batch_size, "max_retries": max_retries}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    return path


def run_walk(loop: Loop, space_id: str, **walk: int) -> str:
    answer = loop.cli(
        "operation",
        "create",
        "-f",
        str(walk_file(loop, **walk)),
        "--space",
        space_id,
        "--watch",
        "--interval",
        "0.2",
    )
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return answer.stdout.strip().splitlines()[0]


def operation(loop: Loop, operation_id: str) -> dict[str, Any]:
    answer = loop.cli("operation", "show", operation_id, "--json")
    assert answer.returncode == 0, answer.stderr
    return dict(json.loads(answer.stdout))


def rows(loop: Loop, space_id: str, include: str) -> list[dict[str, Any]]:
    answer = loop.cli("space", "show", space_id, "--include", include, "--format", "json")
    assert answer.returncode == 0, answer.stderr
    return list(json.loads(answer.stdout))


def requested(loop: Loop, pool: str, operation_id: str) -> list[MeasurementRequested]:
    events = loop.events(loop.topics.measure(pool), operation_id)
    return [e for e in events if isinstance(e, MeasurementRequested)]


def test_a_space_registers_once_and_an_unknown_experiment_is_rejected_with_why(loop: Loop):
    path = space_file(loop, "registered", "store-registered", "benchmark")

    first, again = create_space(loop, path), create_space(loop, path)
    rejected = loop.cli(
        "space", "create", "-f", str(space_file(loop, "bad", "store-x", "no-such-experiment"))
    )

    assert first == again
    assert first.startswith("space-")
    assert rejected.returncode != 0
    assert "no-such-experiment" in rejected.stderr
    assert len(rejected.stderr.strip().splitlines()) == 1
    assert "Traceback" not in rejected.stderr


def test_a_random_walk_over_all_entities_measures_all_80_and_the_view_shows_them(loop: Loop):
    space_id = create_space(loop, space_file(loop, "walk", "store-walk", "benchmark"))

    operation_id = run_walk(loop, space_id)
    progress = operation(loop, operation_id)
    measured = rows(loop, space_id, "measured")

    assert progress["status"] == "completed"
    assert progress["counts"]["measured"] == 80
    assert len(measured) == 80
    assert set(CONSTITUTIVE + TARGETS) <= set(measured[0])
    assert len({tuple(row[p] for p in CONSTITUTIVE) for row in measured}) == 80
    assert all(row["throughput"] > 0 for row in measured)


def test_an_overlapping_space_on_the_same_store_reuses_and_another_store_measures_again(
    loop: Loop,
):
    small = [1, 2, 4, 8, 16]
    first = create_space(loop, space_file(loop, "big", "store-shared", "benchmark"))
    overlap = create_space(
        loop, space_file(loop, "overlap", "store-shared", "benchmark", batch_size=small)
    )
    elsewhere = create_space(
        loop, space_file(loop, "other-store", "store-other", "benchmark", batch_size=small)
    )

    run_walk(loop, first)
    reusing = run_walk(loop, overlap)
    measuring = run_walk(loop, elsewhere)

    assert requested(loop, "steady", reusing) == []
    assert operation(loop, reusing)["counts"]["reused"] == 50
    assert len(rows(loop, overlap, "elsewhere")) == 50
    assert rows(loop, overlap, "measured") == []
    assert len(requested(loop, "steady", measuring)) == 50
    assert len(rows(loop, elsewhere, "measured")) == 50


def test_transient_failures_are_retried_and_invalid_entities_are_not(loop: Loop):
    space_id = create_space(loop, space_file(loop, "flaky", "store-flaky", "flaky-benchmark"))

    operation_id = run_walk(loop, space_id, max_retries=3)
    progress = operation(loop, operation_id)
    measured = rows(loop, space_id, "measured")
    unmeasured = rows(loop, space_id, "unmeasured")
    requests = requested(loop, "flaky", operation_id)
    attempts = Counter(r.entity_id for r in requests)
    invalid = [r for r in unmeasured if "out of memory" in json.dumps(r)]

    assert len(measured) + len(unmeasured) == 80
    assert all(any("reason" in key and row[key] for key in row) for row in unmeasured)
    assert max(r.attempt for r in requests) > 1, "a 20% failure rate must cause retries"
    assert len(invalid) == 2  # batch_size 128 x model_max_length 8192, for 2 and 4 GPUs
    invalid_ids = {
        r.entity_id
        for r in requests
        if r.entity_values["batch_size"] == 128 and r.entity_values["model_max_length"] == 8192
    }
    assert all(attempts[entity] == 1 for entity in invalid_ids)
    assert progress["counts"]["invalid"] == 2


def test_an_operation_published_with_a_plain_kafka_producer_runs_like_one_from_the_cli(
    loop: Loop,
):
    space_id = create_space(
        loop, space_file(loop, "plain", "store-plain", "benchmark", number_gpus=[2])
    )
    operation_id = f"op-plain-{int(time.time() * 1000)}"
    message = {
        "event_id": f"plain-{operation_id}",
        "type": "OperationRequested",
        "schema_version": 1,
        "occurred_at": datetime.now(UTC).isoformat(),
        "correlation_id": operation_id,
        "operation_id": operation_id,
        "space_id": space_id,
        "operator": "random_walk",
        "parameters": {"number_entities": 10, "batch_size": 2, "seed": 11},
        "requested_by": "a-plain-kafka-client",
    }
    schema = json.loads((REPO / "proto/events/OperationRequested.v1.json").read_text())
    jsonschema.validate(message, schema)

    async def publish() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=loop.bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait(
                loop.topics.operations, json.dumps(message).encode(), key=operation_id.encode()
            )
        finally:
            await producer.stop()

    asyncio.run(publish())
    progress = loop.wait_for_end(operation_id)

    assert progress["status"] == "completed"
    assert progress["counts"]["measured"] == 10
    assert len(rows(loop, space_id, "measured")) == 10


def wait_for_measured(loop: Loop, operation_id: str, at_least: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        answer = loop.cli("operation", "show", operation_id, "--json")
        if answer.returncode == 0 and json.loads(answer.stdout)["counts"]["measured"] >= at_least:
            return
        time.sleep(0.3)
    raise AssertionError(f"{operation_id} never reached {at_least} measured: {loop.logs()}")


def test_killing_explorer_sampler_and_projector_mid_operation_loses_and_repeats_nothing(
    loop: Loop,
):
    space_id = create_space(loop, space_file(loop, "killed", "store-killed", "slow-benchmark"))
    created = loop.cli(
        "operation", "create", "-f", str(walk_file(loop, batch_size=2)), "--space", space_id
    )
    assert created.returncode == 0, created.stderr
    operation_id = created.stdout.strip()

    for victim, after in (("explorer", 10), ("sampler", 25), ("projector", 40)):
        wait_for_measured(loop, operation_id, after)
        loop.kill(victim)
        time.sleep(0.5)
        loop.restart(victim)

    progress = loop.wait_for_end(operation_id)
    measured = rows(loop, space_id, "measured")
    events = loop.events(loop.topics.measurements, operation_id)
    completions = {e.event_id: e for e in events if isinstance(e, MeasurementCompleted)}
    per_entity = Counter(e.entity_id for e in completions.values() if e.is_valid)

    assert progress["status"] == "completed"
    assert progress["counts"]["measured"] == 80
    assert len(measured) == 80
    assert len({tuple(row[p] for p in CONSTITUTIVE) for row in measured}) == 80
    assert len(per_entity) == 80
    assert set(per_entity.values()) == {1}, "an entity was measured twice with distinct results"
