"""A pipeline's jobs, counts and best from hand-built pipeline event histories (no ClickHouse)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from discospace.events import Objective, OperationCancelRequested
from discospace.projector.fold import rows_of
from discospace.projector.models import OperationProgress
from discospace.projector.pipelines import child_operation_ids, with_jobs
from discospace.projector.progress import operation_progress, reported_progress
from discospace.projector.spaces import space_states
from discospace.store.tables import OPERATIONS

TPS = Objective(property="train_tokens_per_second", direction="max")
History = Any


def point(model: str, batch: int, gpus: int) -> dict[str, Any]:
    return {"model_name": model, "batch_size": batch, "number_gpus": gpus}


def shown(history: History, operation_id: str) -> OperationProgress | None:
    """The operation as the projector shows one operation: computed from its rows, a pipeline
    with its jobs and its children's progress (ended ones as reported)."""
    folded = history.folded()
    operations, measurements = folded.of("operations"), folded.of("measurements")
    states = {state.space_id: state for state in space_states(folded.of("spaces"))}

    def progress(op_id: str) -> OperationProgress | None:
        rows = [row for row in operations if row.operation_id == op_id]
        if not rows:
            return None
        space = states.get(next(row.space_id for row in rows if row.space_id))
        mine = [row for row in measurements if row.operation_id == op_id]
        computed = operation_progress(op_id, rows, mine, space)
        reported = reported_progress(op_id, rows, space)
        if computed.operator != "pipeline":
            return computed
        return with_jobs(reported or computed, rows, progress, reported is not None)

    return progress(operation_id)


def _jobs(progress: OperationProgress | None) -> list[tuple[str, str, str]]:
    assert progress is not None
    return [(job.stage, job.job, job.status) for job in progress.jobs]


def test_each_job_event_is_a_row_of_its_pipeline_with_its_payload(pipeline_story) -> None:
    events = [e for e in pipeline_story.history.events if e.type.startswith("PipelineJob")]
    rows = [row for event in events for row in rows_of(event)]
    assert {row.table for row in rows} == {OPERATIONS}
    assert {row.values["operation_id"] for row in rows} == {"op-p"}
    assert {row.values["space_id"] for row in rows} == {""}
    completed = next(r for r in rows if r.values["type"] == "PipelineJobCompleted")
    assert json.loads(completed.values["payload"])["result"] == {"operation_id": "op-p-probe_walk"}


def test_a_running_pipeline_shows_its_jobs_in_order_with_what_each_came_to(
    pipeline_story: Any,
) -> None:
    progress = shown(pipeline_story.history, "op-p")
    assert _jobs(progress) == [
        ("probe", "probe_walk", "completed"),
        ("refine", "narrow", "completed"),
        ("execute", "search", "running"),
        ("evaluate", "recheck", "pending"),
    ]
    assert progress is not None
    probe, narrow, _search, recheck = progress.jobs
    assert (probe.kind, probe.child_operation_id) == ("operation", "op-p-probe_walk")
    assert probe.result == {"operation_id": "op-p-probe_walk"}
    assert (narrow.kind, narrow.child_operation_id, narrow.child) == ("hook", None, None)
    assert narrow.result == {
        "narrowed": {"batch_size": [2, 4]},
        "space_id": pipeline_story.space_b.space_id,
    }
    assert (recheck.kind, recheck.optional, recheck.started_at) == ("measure", True, None)


def test_each_job_shows_its_child_operations_progress(pipeline_story) -> None:
    progress = shown(pipeline_story.history, "op-p")
    assert progress is not None
    probe, _, search, _ = progress.jobs
    assert probe.child is not None
    assert search.child is not None
    assert (probe.child.status, probe.child.done, probe.child.total) == ("completed", 2, 2)
    assert probe.child.ending == "stopped: requested_entities_measured"
    assert (search.child.status, search.child.done, search.child.total) == ("running", 1, 2)
    assert search.child.counts.in_flight == 1
    assert search.space_id == search.child.space_id == pipeline_story.space_b.space_id
    assert search.child.best is not None
    assert search.child.best.value == 2500.0


def test_a_running_pipeline_counts_what_its_children_counted_and_their_best(
    pipeline_story,
) -> None:
    progress = shown(pipeline_story.history, "op-p")
    assert progress is not None
    assert (progress.status, progress.operator, progress.total) == ("running", "pipeline", None)
    assert progress.counts.model_dump() == {
        "requested": 4,
        "measured": 3,
        "reused": 0,
        "failed": 0,
        "invalid": 0,
        "in_flight": 1,
        "cancelled": 0,
    }
    assert progress.done == 3
    assert progress.best is not None
    assert (progress.best.property, progress.best.value) == ("train_tokens_per_second", 2500.0)


def test_every_operation_names_the_pipeline_that_asked_for_it(pipeline_story) -> None:
    history = pipeline_story.history
    assert shown(history, "op-p-search").parent_operation_id == "op-p"  # type: ignore[union-attr]
    assert shown(history, "op-p").parent_operation_id is None  # type: ignore[union-attr]


def test_a_finished_pipeline_keeps_an_optional_failure_and_shows_its_reported_counts(
    pipeline_story,
) -> None:
    pipeline_story.finish()
    progress = shown(pipeline_story.history, "op-p")
    assert _jobs(progress) == [
        ("probe", "probe_walk", "completed"),
        ("refine", "narrow", "completed"),
        ("execute", "search", "completed"),
        ("evaluate", "recheck", "optional-failed"),
    ]
    assert progress is not None
    recheck = progress.jobs[-1]
    assert recheck.reason is not None
    assert "no actuator runs max_steps 50" in recheck.reason
    assert recheck.child is not None
    assert recheck.child.status == "failed"
    assert (progress.status, progress.done, progress.counts.requested) == ("completed", 4, 4)
    assert progress.best is not None
    assert progress.best.value == 2500.0


def test_a_pipeline_that_failed_with_its_job_skips_the_jobs_after_it(
    history, make_spec, pipeline_options
) -> None:
    space = history.register(make_spec())
    pipe = history.start(space, "op-f", "pipeline", options=pipeline_options)
    history.job_failed(pipe, "probe", "probe_walk", "the space '${x}' is not a space id")
    history.fail_operation(pipe, "job 'probe_walk' (probe) failed: the space is not a space id")
    progress = shown(history, "op-f")
    assert _jobs(progress) == [
        ("probe", "probe_walk", "failed"),
        ("refine", "narrow", "skipped"),
        ("execute", "search", "skipped"),
        ("evaluate", "recheck", "skipped"),
    ]
    assert progress is not None
    assert progress.jobs[0].reason == "the space '${x}' is not a space id"
    assert progress.jobs[0].started_at is None  # it failed before it could start


def test_a_cancelled_pipeline_shows_the_job_it_was_running_as_cancelled(pipeline_story) -> None:
    history, pipe = pipeline_story.history, pipeline_story.pipeline
    history.add(
        OperationCancelRequested(
            event_id="cancel-p",
            occurred_at=history.tick(),
            operation_id="op-p",
            requested_by="alice",
        )
    )
    pipe.finish(
        "cancelled", {"requested": 2, "measured": 2, "reused": 0, "failed": 0, "invalid": 0}
    )
    assert [status for _, _, status in _jobs(shown(history, "op-p"))] == [
        "completed",
        "completed",
        "cancelled",
        "skipped",
    ]


def test_the_child_operations_are_read_from_the_started_jobs_in_order(pipeline_story) -> None:
    rows = [r for r in pipeline_story.history.folded().of("operations") if r.operation_id == "op-p"]
    assert child_operation_ids(rows) == ["op-p-probe_walk", "op-p-search"]


def _trials_options(options: dict[str, Any], count: int = 3) -> dict[str, Any]:
    return {
        **options,
        "trials": {
            "count": count,
            "over": {"batch_size": {"values": [1, 2, 4, 8]}},
            "objective": {
                "job": "search",
                "property": "train_tokens_per_second",
                "direction": "max",
            },
        },
    }


@pytest.fixture
def trials_history(history, make_spec, pipeline_options) -> History:
    """`op-t`, 3 trials: trial 0 completed (objective 1500), trial 1 failed (recorded,
    optional), trial 2 runs: its child pipeline `op-t-trial-2` runs its probe (1 of 2)."""
    space = history.register(make_spec())
    fixed = history.register(make_spec((4,)))
    pipe = history.start(space, "op-t", "pipeline", options=_trials_options(pipeline_options))
    history.job_started(pipe, "trials", "trial-0", "op-t-trial-0", space.space_id, trial=0)
    trial = {
        "trial": 0,
        "values": {"batch_size": 2},
        "objective": 1500.0,
        "property": "train_tokens_per_second",
        "operation_id": "op-t-trial-0",
        "best_entity_id": "e-2",
        "best_entity_values": point("llama-7b", 2, 1),
    }
    history.job_completed(pipe, "trials", "trial-0", trial, trial=0)
    history.job_started(pipe, "trials", "trial-1", "op-t-trial-1", space.space_id, trial=1)
    history.job_failed(pipe, "trials", "trial-1", "trial 1: no value", optional=True, trial=1)
    history.job_started(pipe, "trials", "trial-2", "op-t-trial-2", fixed.space_id, trial=2)
    child = history.start(
        fixed, "op-t-trial-2", "pipeline", parent="op-t", objective=TPS, options=pipeline_options
    )
    history.job_started(child, "probe", "probe_walk", "op-t-trial-2-probe_walk", fixed.space_id)
    probe = history.start(fixed, "op-t-trial-2-probe_walk", parent="op-t-trial-2", objective=TPS)
    probe.measure(point("llama-7b", 4, 1), tps=1200.0)
    probe.request(point("llama-7b", 4, 2))
    return history


def test_a_pipeline_with_trials_shows_each_trial_as_a_job(trials_history) -> None:
    progress = shown(trials_history, "op-t")
    assert _jobs(progress) == [
        ("trials", "trial-0", "completed"),
        ("trials", "trial-1", "optional-failed"),
        ("trials", "trial-2", "running"),
    ]
    assert progress is not None
    assert [job.trial for job in progress.jobs] == [0, 1, 2]
    assert {job.kind for job in progress.jobs} == {"trial"}
    assert progress.jobs[0].result is not None
    assert progress.jobs[0].result["objective"] == 1500.0


def test_a_running_trial_counts_what_its_own_pipelines_children_counted(trials_history) -> None:
    progress = shown(trials_history, "op-t")
    assert progress is not None
    running = progress.jobs[2].child
    assert running is not None
    assert (running.operator, running.status, running.done) == ("pipeline", "running", 1)
    assert running.counts.in_flight == 1
    assert (progress.counts.requested, progress.done) == (2, 1)


def test_the_best_of_a_pipeline_with_trials_is_its_best_trial(trials_history) -> None:
    progress = shown(trials_history, "op-t")
    assert progress is not None
    assert progress.best is not None
    assert (progress.best.property, progress.best.direction) == ("train_tokens_per_second", "max")
    assert progress.best.value == 1500.0
    assert progress.best.values["batch_size"] == 2  # the trial's recipe
    assert progress.best.entity_values == point("llama-7b", 2, 1)


def test_trials_not_started_yet_are_pending(history, make_spec, pipeline_options) -> None:
    space = history.register(make_spec())
    history.start(space, "op-t", "pipeline", options=_trials_options(pipeline_options, count=2))
    assert _jobs(shown(history, "op-t")) == [
        ("trials", "trial-0", "pending"),
        ("trials", "trial-1", "pending"),
    ]


def test_an_operation_that_is_not_a_pipeline_has_no_jobs(pipeline_story) -> None:
    progress = shown(pipeline_story.history, "op-p-probe_walk")
    assert progress is not None
    assert progress.jobs == []


def test_trials_are_ranked_by_their_own_objective_whatever_the_pipelines(pipeline_options) -> None:
    """As the explorer ranks them: with its own objective (here the lowest memory first), the
    pipeline's best trial is still the one with the most tokens per second."""
    from discospace.events import OperationParameters
    from discospace.projector.pipelines import pipeline_objective

    memory = Objective(property="peak_gpu_memory_mib", direction="min")
    with_trials = OperationParameters(options=_trials_options(pipeline_options), objective=memory)
    without = OperationParameters(options=pipeline_options, objective=memory)

    assert pipeline_objective(with_trials) == Objective(
        property="train_tokens_per_second", direction="max"
    )
    assert pipeline_objective(without) == memory


def test_a_childs_best_found_the_other_way_is_not_the_pipelines_best() -> None:
    """A probe child minimising tokens per second has the slowest entity as its best: the
    pipeline, maximising them, showed it as its best, with direction min."""
    from discospace.projector.models import (
        BestSoFar,
        ChildProgress,
        OperationCountsView,
        PipelineJob,
    )
    from discospace.projector.pipelines import jobs_best

    def job(name: str, direction: str, value: float, stage: str = "execute") -> PipelineJob:
        best = BestSoFar(
            property="train_tokens_per_second",
            direction=direction,
            value=value,
            entity_id=f"e-{name}",
            entity_values={"batch_size": 1},
            experiment_id="x",
        )
        counts = OperationCountsView(
            requested=2, measured=2, reused=0, failed=0, invalid=0, in_flight=0, cancelled=0
        )
        child = ChildProgress(
            operation_id=f"op-{name}", status="completed", counts=counts, done=2, best=best
        )
        return PipelineJob(job=name, stage=stage, status="completed", child=child)

    slowest_first = [job("search", "max", 1200.0), job("check", "min", 1000.0, "evaluate")]
    best = jobs_best(slowest_first, TPS)
    assert best is not None
    assert (best.direction, best.value, best.entity_id) == ("max", 1200.0, "e-search")
    assert jobs_best([job("check", "min", 1000.0)], TPS) is None

    # a running pipeline names what the explorer will name: the last execute or evaluate job
    # with a best, never a probe's (3000 at batch 8, outside the refined space, was shown
    # while the search on it stood at 2500)
    probe_first = [job("probe", "max", 3000.0, "probe"), job("search", "max", 2500.0)]
    best = jobs_best(probe_first, TPS)
    assert best is not None
    assert (best.value, best.entity_id) == (2500.0, "e-search")
    assert jobs_best([job("probe", "max", 3000.0, "probe")], TPS) is None

    # a trial ranks by its objective value once completed: a failed or running trial's child
    # pipeline's best is another job's value (a failed trials pipeline showed one as its best)
    for status in ("optional-failed", "running"):
        trial = job("trial-0", "max", 9000.0, "trials").model_copy(update={"status": status})
        assert jobs_best([trial], TPS) is None, status
