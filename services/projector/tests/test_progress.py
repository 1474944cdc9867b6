"""An operation's progress from its folded rows (no ClickHouse)."""

from __future__ import annotations

import pytest

from discospace.events import Objective, OperationParameters
from discospace.events.operations import OperatorChoice
from discospace.projector.progress import (
    best_so_far,
    operation_progress,
    pair_counts,
    planned_pairs,
    reported_progress,
)
from discospace.projector.spaces import space_states


def _progress(history, operation_id: str):
    folded = history.folded()
    lifecycle = [r for r in folded.of("operations") if r.operation_id == operation_id]
    measurements = [r for r in folded.of("measurements") if r.operation_id == operation_id]
    space_id = measurements[0].space_id if measurements else lifecycle[0].space_id
    space = next(s for s in space_states(folded.of("spaces")) if s.space_id == space_id)
    return operation_progress(operation_id, lifecycle, measurements, space)


def test_a_running_operation_counts_each_pair_by_its_outcome(story) -> None:
    progress = _progress(story.history, "op-a")
    assert progress.status == "running"
    assert progress.counts.model_dump() == {
        "requested": 6,
        "measured": 3,
        "reused": 0,
        "failed": 1,
        "invalid": 1,
        "in_flight": 2,
        "cancelled": 0,
    }
    assert (progress.done, progress.total) == (4, 6)
    assert progress.stop_reason is None


def test_the_best_so_far_is_the_best_valid_result_for_the_objective(story) -> None:
    best = _progress(story.history, "op-a").best
    assert best is not None
    assert (best.value, best.entity_values, best.direction) == (3000.5, story.best, "max")
    assert best.experiment_id == "finetune"


def test_a_completed_operation_says_why_it_stopped(story) -> None:
    progress = _progress(story.history, "op-b")
    assert progress.status == "completed"
    assert progress.stop_reason == "requested_entities_measured"
    assert (progress.counts.measured, progress.counts.reused, progress.done) == (2, 1, 3)
    assert progress.ended_at is not None
    assert progress.ended_at > progress.started_at
    assert progress.best is None  # op-b has no objective


def test_a_cancel_request_shows_until_the_operation_completes(story) -> None:
    story.op_a.cancel()
    assert _progress(story.history, "op-a").status == "cancelling"
    story.op_a.finish(
        "cancelled", {"requested": 6, "measured": 3, "reused": 0, "failed": 1, "invalid": 1}
    )
    progress = _progress(story.history, "op-a")
    assert (progress.status, progress.stop_reason) == ("completed", "cancelled")


def test_a_retryable_failure_is_final_once_the_retries_are_spent(
    history, make_spec, make_point
) -> None:
    space = history.register(make_spec())
    operation = history.start(space, "op-r", max_retries=1)
    for attempt in (1, 2):
        operation.fail(operation.request(make_point("llama-7b", 1, 1), attempt), "node lost", True)
    folded = history.folded()
    assert pair_counts(folded.of("measurements"), max_retries=1).failed == 1
    assert pair_counts(folded.of("measurements"), max_retries=2).in_flight == 1


def test_a_retry_that_succeeds_counts_as_measured(history, make_spec, make_point) -> None:
    space = history.register(make_spec())
    operation = history.start(space, "op-r")
    operation.fail(operation.request(make_point("llama-7b", 1, 1)), "node lost", True)
    operation.complete(operation.request(make_point("llama-7b", 1, 1), 2), {"tps": 1.0})
    counts = pair_counts(history.folded().of("measurements"), max_retries=2)
    assert (counts.requested, counts.measured, counts.failed, counts.in_flight) == (1, 1, 0, 0)


def test_an_objective_on_an_observed_property_id_reads_that_experiment(
    history, make_spec, make_point
) -> None:
    space = history.register(make_spec())
    objective = Objective(property="finetune.peak_gpu_memory_mib", direction="min")
    operation = history.start(space, "op-m", objective=objective)
    operation.measure(make_point("llama-7b", 1, 1), tps=10.0, memory=500)
    operation.measure(make_point("llama-7b", 2, 1), tps=20.0, memory=300)
    operation.measure(make_point("llama-7b", 4, 1), tps=30.0, memory=300)
    best = _progress(history, "op-m").best
    assert best is not None
    assert (best.value, best.entity_values["batch_size"]) == (300.0, 2)


def test_an_operation_on_all_of_a_space_plans_every_entity(story) -> None:
    state = next(
        s
        for s in space_states(story.history.folded().of("spaces"))
        if s.space_id == story.space_a.space_id
    )
    assert planned_pairs(OperationParameters(number_entities="all"), state) == 16
    assert planned_pairs(OperationParameters(number_entities=40), state) == 16
    assert planned_pairs(OperationParameters(number_entities=3), None) is None


def test_an_operation_that_lists_its_entities_plans_each_distinct_one_once(story) -> None:
    state = next(
        s
        for s in space_states(story.history.folded().of("spaces"))
        if s.space_id == story.space_a.space_id
    )
    first = {"model_name": "llama-7b", "batch_size": 2, "number_gpus": 1}
    second = {**first, "batch_size": 4.0}
    listed = OperationParameters(options={"points": [first, second, {**first}]})
    assert planned_pairs(listed, state) == 2  # the third is the first again
    assert planned_pairs(OperationParameters(options={"points": "${top.entities}"}), state) == 16


def test_an_ended_operation_can_be_shown_as_its_explorer_reported_it(story) -> None:
    objective = Objective(property="train_tokens_per_second", direction="max")
    story.op_a.finish(
        "max_measurements",
        {"requested": 6, "measured": 4, "reused": 0, "failed": 1, "invalid": 1},
        best_entity_id="e-best",
        best_entity_values=story.best,
        best_values={"train_tokens_per_second": 3000.5, "peak_gpu_memory_mib": 60000},
    )
    rows = [r for r in story.history.folded().of("operations") if r.operation_id == "op-a"]
    reported = reported_progress("op-a", rows)
    assert reported is not None
    assert (reported.status, reported.stop_reason, reported.done) == (
        "completed",
        "max_measurements",
        5,
    )
    assert (reported.counts.in_flight, reported.counts.cancelled) == (0, 1)
    assert reported.best is not None
    assert (reported.best.entity_id, reported.best.value) == ("e-best", 3000.5)
    assert reported.parameters["objective"] == objective.model_dump()


def test_a_running_operation_has_nothing_reported_yet(story) -> None:
    rows = [r for r in story.history.folded().of("operations") if r.operation_id == "op-a"]
    assert reported_progress("op-a", rows) is None


def test_without_its_space_a_bare_objective_has_no_best_but_an_observed_id_has(story) -> None:
    folded = story.history.folded()
    lifecycle = [r for r in folded.of("operations") if r.operation_id == "op-a"]
    measurements = [r for r in folded.of("measurements") if r.operation_id == "op-a"]

    assert operation_progress("op-a", lifecycle, measurements, None).best is None
    observed = OperationParameters(
        objective=Objective(property="finetune.train_tokens_per_second", direction="max")
    )
    best = best_so_far(measurements, observed, None)
    assert best is not None
    assert (best.value, best.experiment_id) == (3000.5, "finetune")


def test_what_was_in_flight_when_the_operation_stopped_is_cancelled_not_failed(story) -> None:
    """op-a stops with 2 pairs in flight (a retry and a pending request); the actuator then
    drops one ("operation completed", not retryable) and the other's result lands later,
    better than the best: neither changes what the operation counted or found."""
    story.op_a.finish(
        "max_measurements", {"requested": 6, "measured": 3, "reused": 0, "failed": 1, "invalid": 1}
    )
    story.op_a.fail(
        story.op_a.request(story.retrying, attempt=2), "operation completed", retryable=False
    )
    story.op_a.measure(story.pending, tps=9999.0)

    progress = _progress(story.history, "op-a")

    assert progress.counts.model_dump() == {
        "requested": 6,
        "measured": 3,
        "reused": 0,
        "failed": 1,
        "invalid": 1,
        "in_flight": 0,
        "cancelled": 2,
    }
    assert progress.done == 4
    assert progress.best is not None
    assert progress.best.value == 3000.5


def test_an_ended_operation_lists_the_same_counts_it_shows(story) -> None:
    story.op_a.finish(
        "max_measurements", {"requested": 6, "measured": 3, "reused": 0, "failed": 1, "invalid": 1}
    )
    story.op_a.fail(story.op_a.request(story.pending), "operation completed", retryable=False)
    rows = [r for r in story.history.folded().of("operations") if r.operation_id == "op-a"]

    reported = reported_progress("op-a", rows)

    assert reported is not None
    assert reported.counts == _progress(story.history, "op-a").counts


ZEUS_CHOICE = {
    "values": {"batch_size": 128, "power_limit": 175},
    "expected_cost": 41234.5,
    "cost_so_far": 123456.0,
    "recurrence_costs": (50000.0, 41000.0, 32456.0),
    "recurrence_phases": ("pruning", "pruning", "bandit"),
}


def test_what_the_operator_chose_is_shown_and_listed_once_it_completed(story) -> None:
    story.op_a.finish(
        "operator_finished",
        {"requested": 6, "measured": 3, "reused": 0, "failed": 1, "invalid": 1},
        choice=OperatorChoice(**ZEUS_CHOICE),
    )
    rows = [r for r in story.history.folded().of("operations") if r.operation_id == "op-a"]

    shown = _progress(story.history, "op-a").choice
    listed = reported_progress("op-a", rows)

    assert shown is not None
    assert shown.model_dump() == ZEUS_CHOICE
    assert listed is not None
    assert listed.choice == shown


def test_an_operation_without_a_choice_shows_none(story) -> None:
    assert _progress(story.history, "op-b").choice is None


@pytest.mark.parametrize(
    ("stop_reason", "total"),
    [
        ("requested_entities_measured", 2),
        ("space_exhausted", 2),
        ("operator_finished", 2),
        ("max_measurements", 3),
        ("cancelled", 3),
    ],
)
def test_an_operation_that_finished_its_plan_totals_what_it_settled(
    history, make_spec, make_point, stop_reason: str, total: int
) -> None:
    """A dependent experiment is planned for every entity and skipped where its dependency
    gave no valid result: a walk that measured all it could read 12/16 for good. Once the
    operation says it finished its plan, its total is what it settled; stopped short (a budget,
    a cancel), the plan stays, beside what was done."""
    space = history.register(make_spec())
    operation = history.start(space, "op-d", number_entities=3)
    operation.measure(make_point("llama-7b", 1, 1), tps=10.0)
    operation.measure(make_point("llama-7b", 2, 1), tps=20.0)
    assert _progress(history, "op-d").total == 3

    counts = {"requested": 2, "measured": 2, "reused": 0, "failed": 0, "invalid": 0}
    operation.finish(stop_reason, counts)

    progress = _progress(history, "op-d")
    assert (progress.done, progress.total) == (2, total)
