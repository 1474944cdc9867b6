"""Operations at once on spaces sharing a store: every (entity, experiment) measured once.

Three walks run together, two on one space and one on a space that shares 30 of its 40 entities
with it, all in the same (sequential) order, on a slow actuator with several measurements in
flight: each shared pair is drawn by several operations while its measurement is in flight.
The sampler must send it to the pool once and answer the others with `MeasurementReused` when
it lands (issue 13: 3 and then 5 of 40 shared entities were measured twice).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.events import MeasurementCompleted, MeasurementRequested
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

SHAPE: dict[str, list[Any]] = {
    "dataset_id": ["news-tokens-16384plus-entries-4096"],
    "model_name": ["llama3-8b"],
    "torch_dtype": ["bfloat16"],
    "gpu_model": ["NVIDIA-A100-80GB-PCIe"],
    "number_gpus": [2, 4],
    "model_max_length": [512, 1024, 2048, 4096, 8192],
}
SLOW = {"experiments": [{"experiment": "benchmark"}], "latency_s": 0.3, "invalid_when": None}
STORE = "store-concurrent"


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("concurrent"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        for worker in ("slow-1", "slow-2"):
            running.actuator(worker, "slow", SLOW, DISCOSPACE_ACTUATOR_CONCURRENCY="6")
        running.wait_healthy()
        running.wait_for_catalog({"benchmark"})
        yield running
    finally:
        running.stop()


def space(loop: Loop, name: str, batch_sizes: list[int]) -> str:
    shape = {**SHAPE, "batch_size": batch_sizes}
    spec = {
        "sample_store": STORE,
        "entity_space": [{"name": key, "values": values} for key, values in shape.items()],
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }
    path = loop.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return loop.cli_ok("space", "create", "-f", str(path)).strip()


def walk_file(loop: Loop) -> Path:
    path = loop.workdir / "walk.yaml"
    parameters = {"number_entities": "all", "sampler": "sequential", "batch_size": 6}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    return path


def walk(loop: Loop, space_id: str, path: Path) -> str:
    answer = loop.cli_ok("operation", "create", "-f", str(path), "--space", space_id)
    return answer.strip().splitlines()[0]


def measured_per_pair(loop: Loop, kind: type[Any], topic: str) -> Counter[tuple[str, str]]:
    """How many distinct events of `kind` each (entity, experiment) of the store has."""
    events = {e.event_id: e for e in loop.events(topic) if isinstance(e, kind)}
    return Counter(
        (e.entity_id, e.experiment_id) for e in events.values() if e.sample_store == STORE
    )


def test_walks_at_once_on_spaces_sharing_a_store_measure_every_pair_exactly_once(loop: Loop):
    first = space(loop, "first", [1, 2, 4, 8])
    second = space(loop, "second", [2, 4, 8, 16])
    spaces = [first, second, first]
    path = walk_file(loop)

    with ThreadPoolExecutor(len(spaces)) as pool:
        operations = list(pool.map(lambda space_id: walk(loop, space_id, path), spaces))
        ends = list(pool.map(loop.wait_for_end, operations))

    requested = measured_per_pair(loop, MeasurementRequested, loop.topics.measure("slow"))
    completed = measured_per_pair(loop, MeasurementCompleted, loop.topics.measurements)
    reused = [end["counts"]["reused"] for end in ends]
    assert [end["status"] for end in ends] == ["completed"] * 3, ends
    assert [end["counts"]["measured"] + end["counts"]["reused"] for end in ends] == [40] * 3
    assert len(completed) == 50
    assert {pair: n for pair, n in completed.items() if n > 1} == {}
    assert {pair: n for pair, n in requested.items() if n > 1} == {}
    assert sum(reused) == 3 * 40 - 50
