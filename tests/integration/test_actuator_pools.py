"""Two pools, two workers each, through every service on the real broker: requests go only to
the pool of the entity's `gpu_model`, both workers of a pool take work, and a worker killed
mid-measurement loses nothing: the measurement completes once, by the other worker.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from discospace.events import (
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementStarted,
)
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

POOLS = ("cpu-a", "cpu-b")
WORKERS = {pool: (f"{pool}-1", f"{pool}-2") for pool in POOLS}
VICTIM = "cpu-a-1"
SYNTHETIC = {
    "experiments": [{"experiment": "pooled-benchmark"}],
    "latency_s": 1.5,
    "invalid_when": None,
}
ENTITY_SPACE = [
    {"name": "gpu_model", "values": list(POOLS)},
    {"name": "batch_size", "values": [1, 2, 4, 8, 16, 32]},
    {"name": "model_max_length", "values": [512, 1024]},
]
ENTITIES = 24


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("pools"))
    try:
        for name in ("registry", "explorer", "sampler", "projector"):
            running.start(name)
        for pool, names in WORKERS.items():
            for name in names:
                running.actuator(name, pool, SYNTHETIC, DISCOSPACE_ACTUATOR_GPU_MODEL=pool)
        running.wait_healthy()
        _wait_for_both_pools(running)
        yield running
    finally:
        running.stop()


def _wait_for_both_pools(loop: Loop, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = loop.cli("actuators", "--json")
        if answer.returncode == 0 and all(pool in answer.stdout for pool in POOLS):
            return
        time.sleep(0.5)
    raise AssertionError(f"the pools never announced themselves: {loop.logs()}")


def _space_file(loop: Loop) -> Path:
    spec = {
        "sample_store": "store-pools",
        "entity_space": ENTITY_SPACE,
        "measurement_space": [{"actuator": "synthetic", "experiment": "pooled-benchmark"}],
    }
    path = loop.workdir / "pools.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _walk_file(loop: Loop) -> Path:
    path = loop.workdir / "walk.yaml"
    parameters = {"number_entities": "all", "batch_size": 6, "max_retries": 0}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    return path


def _kill_mid_measurement(loop: Loop, name: str, timeout_s: float = 120) -> None:
    """SIGKILL worker `name` once it has measured one request and is measuring another."""
    worker = loop.services[name]
    valid = {"actuator": "synthetic", "outcome": "valid"}
    deadline = time.monotonic() + timeout_s
    while worker.metric("discospace_actuator_calls_total", valid) < 1:
        assert time.monotonic() < deadline, f"{name} never measured: {loop.logs()}"
        time.sleep(0.05)
    while worker.metric("discospace_measurements_in_flight") < 1:
        assert time.monotonic() < deadline, f"{name} never measured again: {loop.logs()}"
        time.sleep(0.02)
    loop.kill(name)


def _pool_of(worker_id: str) -> str:
    return worker_id.rsplit("-", 1)[0]


def test_pools_take_only_their_entities_both_workers_work_and_a_killed_worker_loses_nothing(
    loop: Loop,
):
    space_id = loop.cli_ok("space", "create", "-f", str(_space_file(loop))).strip()
    created = loop.cli_ok("operation", "create", "-f", str(_walk_file(loop)), "--space", space_id)
    operation_id = created.splitlines()[0]

    _kill_mid_measurement(loop, VICTIM)
    progress = loop.wait_for_end(operation_id)
    events = loop.events(loop.topics.measurements, operation_id)
    requested = {
        pool: [
            e
            for e in loop.events(loop.topics.measure(pool), operation_id)
            if isinstance(e, MeasurementRequested)
        ]
        for pool in POOLS
    }
    starts = [e for e in events if isinstance(e, MeasurementStarted)]
    completions = {e.event_id: e for e in events if isinstance(e, MeasurementCompleted)}
    per_entity = Counter(e.entity_id for e in completions.values())
    rows = json.loads(
        loop.cli_ok("space", "show", space_id, "--include", "measured", "--format", "json")
    )

    assert progress["status"] == "completed", loop.logs()
    assert progress["counts"]["measured"] == ENTITIES
    assert progress["counts"]["failed"] == 0
    assert len(rows) == ENTITIES
    for pool, asked in requested.items():
        assert asked, f"pool {pool} was asked for nothing"
        assert {e.entity_values["gpu_model"] for e in asked} == {pool}
    assert all(_pool_of(e.worker_id) == e.entity_values["gpu_model"] for e in starts)
    for pool, names in WORKERS.items():
        assert {e.worker_id for e in starts if _pool_of(e.worker_id) == pool} == set(names)
    assert len(per_entity) == ENTITIES
    assert set(per_entity.values()) == {1}, "an entity was measured twice"
    assert not any(isinstance(e, MeasurementFailed) for e in events)
    answered = [e for e in events if isinstance(e, MeasurementCompleted)]
    orphaned = {e.request_id for e in starts if e.worker_id == VICTIM} - {
        e.request_id for e in answered if e.worker_id == VICTIM
    }
    victim = [(type(e).__name__, e.request_id[-8:], e.occurred_at.time()) for e in events
              if getattr(e, "worker_id", None) == VICTIM]  # fmt: skip
    assert len(orphaned) == 1, f"the victim was not killed mid-measurement: {victim}"
    assert {e.worker_id for e in answered if e.request_id in orphaned} == {"cpu-a-2"}
