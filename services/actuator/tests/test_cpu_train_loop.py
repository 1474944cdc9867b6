"""cpu_train end to end: a worker of the `cpu` pool runs the real benchmark in child processes,
driven by the discovery loop's services on the real broker."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import product

import pytest
import yaml

from discospace.actuator.cpu_train.memory import estimated_peak_mb
from discospace.actuator.cpu_train.presets import PRESETS
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

SIZES, BATCHES, LENGTHS = ["tiny", "small"], [1, 64], [32, 128]
CAP_MB = 25  # far from every estimate and measured peak: 14 MiB below, 36 MiB above
TARGETS = ["train_tokens_per_second", "train_samples_per_second", "train_runtime"]


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("cpu-train-loop"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator("cpu-worker", "cpu", {}, DISCOSPACE_ACTUATOR_ACTUATOR="cpu_train")
        running.wait_healthy()
        yield running
    finally:
        running.stop()


def _cli_json(loop: Loop, *args: str) -> object:
    answer = loop.cli(*args)
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return json.loads(answer.stdout)


def _create_space(loop: Loop) -> str:
    spec = {
        "sample_store": "cpu-train-loop",
        "entity_space": [
            {"name": "model_size", "values": SIZES},
            {"name": "batch_size", "values": BATCHES},
            {"name": "model_max_length", "values": LENGTHS},
            {"name": "number_threads", "values": [1]},
        ],
        "measurement_space": [
            {
                "actuator": "cpu_train",
                "experiment": "train",
                "parameterization": {"duration": "3ba", "memory_cap_mb": CAP_MB},
            }
        ],
    }
    path = loop.workdir / "space.yaml"
    path.write_text(yaml.safe_dump(spec))
    deadline = time.monotonic() + 60
    while True:  # the worker announces its catalog once it is up
        answer = loop.cli("space", "create", "-f", str(path))
        if answer.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return answer.stdout.strip()


def test_a_walk_over_a_cpu_space_trains_each_configuration_and_finds_the_ones_over_the_cap(
    loop: Loop,
):
    space_id = _create_space(loop)
    walk = loop.workdir / "walk.yaml"
    walk.write_text(
        yaml.safe_dump(
            {"operator": "random_walk", "parameters": {"number_entities": "all", "batch_size": 2}}
        )
    )

    answer = loop.cli("operation", "create", "-f", str(walk), "--space", space_id, "--watch")
    assert answer.returncode == 0, answer.stderr + loop.logs()
    measured = _cli_json(
        loop, "space", "show", space_id, "--include", "measured", "--format", "json"
    )
    unmeasured = _cli_json(
        loop, "space", "show", space_id, "--include", "unmeasured", "--format", "json"
    )

    over_cap = {
        (size, batch, length)
        for size, batch, length in product(SIZES, BATCHES, LENGTHS)
        if estimated_peak_mb(PRESETS[size], batch, length, "float32") > CAP_MB
    }
    assert 0 < len(over_cap) < 8
    assert len(measured) == 8 - len(over_cap)
    assert {
        (r["model_size"], r["batch_size"], r["model_max_length"]) for r in unmeasured
    } == over_cap
    assert all("out of memory" in json.dumps(row) for row in unmeasured)
    assert all(row[target] > 0 for row in measured for target in TARGETS)
    assert all(row["peak_memory_mb"] <= CAP_MB for row in measured)
