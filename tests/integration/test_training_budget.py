"""A budget in training units, end to end: the real broker, every service as a process, and a
`cpu_train` worker that really trains.

Each run trains 4 batches (`duration: 4ba`) and an epoch is 32 samples, so a run at batch size 2
trains 8 samples (0.25ep) and one at batch size 4 trains 16 (0.5ep). Measured one at a time,
the walk stops at the first run that takes the sum to 1ep or more, and says what it trained.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
import yaml

from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

POOL = "cpu"
TRAINING = {"duration": "4ba", "samples_per_epoch": 32}
ENTITY_SPACE: list[dict[str, Any]] = [
    {"name": "model_size", "values": ["tiny"]},
    {"name": "batch_size", "values": [2, 4]},
    {"name": "model_max_length", "values": [16, 32]},
    {"name": "number_threads", "values": [1]},
]


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("training-budget"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator("cpu-train", POOL, TRAINING, DISCOSPACE_ACTUATOR_ACTUATOR="cpu_train")
        running.wait_healthy()
        running.wait_for_catalog({"train"})
        yield running
    finally:
        running.stop()


def create_space(loop: Loop) -> str:
    spec = {
        "sample_store": "store-training-budget",
        "entity_space": ENTITY_SPACE,
        "measurement_space": [{"actuator": "cpu_train", "experiment": "train"}],
    }
    path = loop.workdir / "space.yaml"
    path.write_text(yaml.safe_dump(spec))
    return loop.cli_ok("space", "create", "-f", str(path)).strip()


def create_walk(loop: Loop, space_id: str, stopping: dict[str, Any], name: str) -> Any:
    path = loop.workdir / f"{name}.yaml"
    parameters = {"number_entities": "all", "batch_size": 1, "seed": 5, "stopping": stopping}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    return loop.cli("operation", "create", "-f", str(path), "--space", space_id)


def test_a_walk_stops_once_its_runs_trained_the_budget_and_says_how_much(loop: Loop):
    space_id = create_space(loop)

    answer = create_walk(loop, space_id, {"max_training": "1ep"}, "walk")
    assert answer.returncode == 0, answer.stderr + loop.logs()
    operation_id = answer.stdout.strip().splitlines()[0]
    progress = loop.wait_for_end(operation_id)

    measured = loop.cli_json("space", "show", space_id, "--include", "measured", "--format", "json")
    epochs = [Fraction(row["batch_size"] * 4, 32) for row in measured]

    assert progress["status"] == "completed", json.dumps(progress)
    assert progress["stop_reason"] == "max_training"
    assert progress["counts"]["measured"] == len(measured) < 4
    assert sum(epochs) >= 1 > sum(epochs) - max(epochs)  # it stopped at the first run past 1ep
    trained = f"{float(sum(epochs)):g}"
    assert progress["stop_detail"].startswith(
        f"trained {trained}ep of 1ep; {len(measured)} measured"
    )


def test_a_budget_in_dur_is_refused_at_the_door_when_no_run_has_a_maximum(loop: Loop):
    """The explorer's start check, applied by `operation create`: one sentence, exit 2, and
    no operation requested (before, the request was published and failed in the explorer)."""
    space_id = create_space(loop)
    before = len(loop.events(loop.topics.operations))

    answer = create_walk(loop, space_id, {"max_training": "2dur"}, "walk-dur")

    assert answer.returncode == 2, answer.stdout + answer.stderr
    [line] = answer.stderr.strip().splitlines()
    assert "max_training 2dur is a fraction of each run's maximum" in line
    assert "(max_duration or max_epochs)" in line
    assert len(loop.events(loop.topics.operations)) == before
