"""The shipped data-recipe pipeline (`examples/pipelines/data-recipe.yaml`) end to end: every
service as its own process, two real `data_recipe` workers running Data-Juicer's filters and
training cpu_train's model on this CPU, the real broker and chDB, driven through the
`discospace` command as a user would run it.

The example's own file, with its counts made smaller so that it runs in a few minutes (2
trials, 2 recipes searched instead of 3, 100 training batches instead of 400 everywhere, in the
space too, so the unrefined recipe and the trials still train the same budget): its shape (the
stages, the jobs, their references, the trials) is what is tested. It checks what the issue
asks of the example: the pipeline completes; the best trial's held-out loss is lower than the
unrefined recipe's, measured in the same run with the same budget; a second run of the same
request measures nothing new (every measurement reused from the store).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.core import DiscoverySpace, SpaceSpec
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementReused,
    MeasurementStarted,
    PipelineJobCompleted,
)
from discospace.testing.loop import REPO, Loop

pytestmark = pytest.mark.integration

pytest.importorskip(
    "data_juicer",
    reason="the data_recipe actuator needs its data extra: pip install -e services/actuator[data]",
)

EXAMPLES = REPO / "examples" / "pipelines"
BUDGET = "100ba"
TRIALS = 2
MEASURES = (MeasurementStarted, MeasurementCompleted, MeasurementReused)


def with_budget(node: Any) -> Any:
    """`node` with every parameterization's `duration` set to the test's budget."""
    if isinstance(node, dict):
        return {
            key: BUDGET if key == "duration" else with_budget(value) for key, value in node.items()
        }
    if isinstance(node, list):
        return [with_budget(item) for item in node]
    return node


def variant(tmp: Path) -> tuple[Path, Path, str]:
    """The example's space and pipeline files with smaller counts and budget, and the space's id."""
    space = with_budget(yaml.safe_load((EXAMPLES / "data-recipe-space.yaml").read_text()))
    space_id = DiscoverySpace.from_spec(SpaceSpec.model_validate(space)).id
    pipeline = with_budget(yaml.safe_load((EXAMPLES / "data-recipe.yaml").read_text()))
    pipeline["trials"]["count"] = TRIALS
    stages = pipeline["stages"]
    jobs = {job["name"]: job for stage in stages.values() for job in stage}
    jobs["search"]["parameters"]["number_entities"] = 2
    jobs["unrefined"]["space"] = space_id  # the example names the example space's id
    space_path, pipeline_path = tmp / "space.yaml", tmp / "pipeline.yaml"
    space_path.write_text(yaml.safe_dump(space))
    pipeline_path.write_text(yaml.safe_dump(pipeline, sort_keys=False))
    return space_path, pipeline_path, space_id


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("data-recipe-pipeline"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        for worker in ("data-1", "data-2"):  # one per core
            running.actuator(worker, "data", {}, DISCOSPACE_ACTUATOR_ACTUATOR="data_recipe")
        running.wait_healthy()
        running.wait_for_catalog({"process_train"}, timeout_s=120)
        yield running
    finally:
        running.stop()


def family(events: list[Event], operation_id: str) -> list[Event]:
    """The events of an operation and of every operation under it (ids `<op>-...`)."""
    return [
        e
        for e in events
        if (found := getattr(e, "operation_id", None)) is not None
        and (found == operation_id or found.startswith(f"{operation_id}-"))
    ]


def run_pipeline(loop: Loop, pipeline: Path, space_id: str) -> dict[str, Any]:
    """Create the pipeline and watch it to its end: its id, seconds, show, events."""
    started = time.monotonic()
    answer = loop.cli(
        "operation", "create", "-f", str(pipeline), "--space", space_id, "--watch", timeout_s=600
    )
    elapsed = time.monotonic() - started
    assert answer.returncode == 0, answer.stdout[-3000:] + answer.stderr + loop.logs()
    operation_id = answer.stdout.strip().splitlines()[0]
    events = loop.events(loop.topics.operations) + loop.events(loop.topics.measurements)
    shown = loop.cli_json("operation", "show", operation_id, "--json")
    print(f"{pipeline.name}: {operation_id} ended in {elapsed:.1f} s")
    return {"id": operation_id, "show": shown, "events": family(events, operation_id)}


@pytest.fixture(scope="module")
def runs(loop: Loop, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The smaller example run twice on the same space, one run after the other."""
    space_path, pipeline_path, space_id = variant(tmp_path_factory.mktemp("files"))
    assert loop.cli_ok("space", "create", "-f", str(space_path)).strip() == space_id
    return [run_pipeline(loop, pipeline_path, space_id) for _ in range(2)]


def measurement_counts(run: dict[str, Any]) -> Counter[str]:
    """Started, completed and reused measurements of a run, each counted once."""
    distinct = {e.event_id: e for e in run["events"] if isinstance(e, MEASURES)}
    return Counter(type(e).__name__ for e in distinct.values())


def unrefined_loss(run: dict[str, Any]) -> float:
    """The unrefined recipe's held-out loss, measured by trial 0's `unrefined` job."""
    child = f"{run['id']}-trial-0-unrefined"
    losses = {
        e.values["heldout_loss"]
        for e in run["events"]
        if isinstance(e, MeasurementCompleted | MeasurementReused) and e.operation_id == child
    }
    assert len(losses) == 1, losses
    return float(losses.pop())


def trial_results(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        e.job: e.result
        for e in run["events"]
        if isinstance(e, PipelineJobCompleted) and e.operation_id == run["id"]
    }


def test_the_example_completes_every_trial(runs: list[dict[str, Any]]):
    first = runs[0]
    trials = trial_results(first)

    assert first["show"]["status"] == "completed", first["show"]
    assert sorted(trials) == [f"trial-{i}" for i in range(TRIALS)]
    assert [job["status"] for job in first["show"]["jobs"]] == ["completed"] * TRIALS
    assert measurement_counts(first)["MeasurementCompleted"] > 0


def test_the_best_trial_beats_the_unrefined_recipe_measured_in_the_same_run(
    runs: list[dict[str, Any]],
):
    first = runs[0]
    baseline = unrefined_loss(first)
    objectives = [result["objective"] for result in trial_results(first).values()]
    best = min(objectives)
    print(f"unrefined recipe: heldout_loss {baseline:.4f}; trials: {objectives}")

    assert first["show"]["best"]["values"]["heldout_loss"] == pytest.approx(best)
    assert best < baseline


def test_pipeline_compare_reads_the_unrefined_recipe_as_the_baseline(
    loop: Loop, runs: list[dict[str, Any]]
):
    first = runs[0]
    compared = loop.cli_json(
        "pipeline", "compare", first["id"], "--baseline", "unrefined", "--json"
    )["objective"]

    assert compared["baseline"]["value"] == pytest.approx(unrefined_loss(first))
    assert compared["refined"]["value"] < compared["baseline"]["value"]
    assert compared["better"] is True


def test_a_second_run_of_the_same_file_measures_nothing_new(runs: list[dict[str, Any]]):
    first, second = runs
    counts = measurement_counts(second)
    print(f"second run {second['id']}: {dict(counts)}")

    assert second["show"]["status"] == "completed", second["show"]
    assert counts["MeasurementStarted"] == 0
    assert counts["MeasurementCompleted"] == 0
    assert counts["MeasurementReused"] > 0
    assert unrefined_loss(second) == unrefined_loss(first)
    assert second["show"]["best"] == first["show"]["best"]
