"""An operation's progress (pure): status from its lifecycle, counts and best from its results.

Counts are per entity-experiment pair (one measurement request id): measured once a completion
landed (valid or invalid), reused when the store answered it, failed when its latest attempt
failed for good (`discospace.core.results.gives_up`, the explorer's rule too), in flight
otherwise (retries included). The best so far is the best valid result for the objective
among the operation's results (measured or reused), the first to reach it winning ties; which
experiment's results hold the objective, a result's value and which value is better are the
rules of `discospace.core.results`, so the explorer and the projector name the same best.

A bare target name as objective means the first experiment of the space's declared measurement
space that measures it. When the space is not known to the projector (not registered, or its
registration not projected yet), an observed property id `<experiment id>.<target>` is still
read from its experiment, but a bare target name cannot be placed: the progress shows no best
until the space is known. An ended operation's reported best needs no space (its values are
keyed by target); only its `experiment_id` stays empty without one.

An ended operation counts what it received before it ended (`before_end`): when a stopping
rule ends it (or a pipeline cancels its child) the explorer completes at once, without waiting
for the measurements in flight, so a pair not settled by then is `cancelled`, whatever comes of
it later (the actuator's "operation completed" failure, or a result that lands in the sample
store but not in the operation's counts or best). A user's cancel waits for what is in flight
(up to the explorer's `cancel_wait_s`), so its counts are final when it ends.
The end is told by time: the `occurred_at` of the operation's end against that of each result.

What an operator that settles on one configuration chose (`zeus_bso`) is read from its
`OperationCompleted.choice`, as the explorer reported it, in the list and for one operation.

An ended operation is shown as the explorer reported it in its `OperationCompleted` (or
`OperationFailed`) counts and best entity, in the list and on its own (what was in flight at
the end is `cancelled` there too): the explorer counted what it had read when it stopped, and
results stamped in one order by two workers (or two clocks) may be read in the other, so a
count by time could disagree with it. A running operation's progress is computed from its
results; the results of an ended one (`/operation/results`) are those stamped before its end.

A pipeline measures nothing itself: its jobs, and its counts and best from its children's, are
added by `discospace.projector.pipelines`. Every operation names the pipeline that asked for it
(`parent_operation_id`, from its `OperationRequested`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from discospace.core import (
    DiscospaceError,
    Entity,
    Objective,
    ObjectiveSource,
    as_number,
    gives_up,
    objective_source,
    result_value,
    target_of,
)
from discospace.events import OperationParameters
from discospace.projector.models import (
    BestSoFar,
    OperationCountsView,
    OperationProgress,
    OperationStatus,
)
from discospace.projector.queries import STAGE, MeasurementRow, OperationRow, PairSummary
from discospace.projector.spaces import SpaceLayout, SpaceState
from discospace.projector.view import Retries

_ENDED = ("OperationCompleted", "OperationFailed")
_LIFECYCLE = frozenset(
    {
        "OperationRequested",
        "OperationStarted",
        "OperationCancelRequested",
        "OperationCompleted",
        "OperationFailed",
    }
)
_WITH_SPACE = ("OperationStarted", "OperationRequested", "OperationCompleted")


@dataclass(frozen=True)
class _Lifecycle:
    """The payloads of an operation's lifecycle events, by type (the latest of each)."""

    payloads: dict[str, dict[str, Any]]
    times: dict[str, Any]

    @classmethod
    def of(cls, rows: Sequence[OperationRow]) -> _Lifecycle:
        """The lifecycle among the operation's rows (a pipeline's job events are not)."""
        rows = [row for row in rows if row.type in _LIFECYCLE]
        return cls(
            {row.type: json.loads(row.payload) for row in rows},
            {row.type: row.occurred_at for row in rows},
        )

    def get(self, event_type: str, name: str) -> Any:
        return self.payloads.get(event_type, {}).get(name)

    def first(self, name: str, *event_types: str) -> Any:
        return next((self.get(t, name) for t in event_types if self.get(t, name) is not None), None)

    @property
    def status(self) -> OperationStatus:
        if "OperationFailed" in self.payloads:
            return "failed"
        if "OperationCompleted" in self.payloads:
            return "completed"
        if "OperationCancelRequested" in self.payloads:
            return "cancelling"
        return "running" if "OperationStarted" in self.payloads else "requested"

    @property
    def ended_at(self) -> datetime | None:
        return next((self.times[t] for t in _ENDED if t in self.times), None)

    @cached_property
    def parameters(self) -> OperationParameters:
        """The operation's parameters, validated once per lifecycle (a progress reads them
        several times)."""
        raw = self.first("parameters", "OperationStarted", "OperationRequested")
        return OperationParameters.model_validate(raw or {})


def operation_progress(
    operation_id: str,
    lifecycle: Sequence[OperationRow],
    measurements: Sequence[MeasurementRow],
    space: SpaceState | None = None,
) -> OperationProgress:
    """The progress of one operation from its lifecycle events and measurement events."""
    life = _Lifecycle.of(lifecycle)
    received = before_end(measurements, life.ended_at)
    ended = life.ended_at is not None
    counts = pair_counts(received, life.parameters.max_retries, ended=ended)
    best = best_so_far(received, life.parameters, space)
    return _progress(operation_id, life, counts, best, space, _space_of(measurements))


@dataclass(frozen=True)
class ProgressReads:
    """What one operation's progress reads from the store besides its lifecycle: its pairs up
    to `until` (its end; None while it runs), and the best result at `objective` (experiment
    id, target, direction; None when the objective cannot be placed, see the module doc).
    `life` is the lifecycle they were derived from, which `summed_progress` goes on with."""

    until: datetime | None
    objective: tuple[str, str, str] | None
    life: _Lifecycle


def progress_reads(lifecycle: Sequence[OperationRow], space: SpaceState | None) -> ProgressReads:
    """What to read for the progress of the operation of `lifecycle` on `space`."""
    life = _Lifecycle.of(lifecycle)
    objective = life.parameters.objective
    source = None if objective is None else objective_source_in(objective, space)
    if objective is None or source is None:
        return ProgressReads(life.ended_at, None, life)
    at = (source.experiment_id, source.target, objective.direction)
    return ProgressReads(life.ended_at, at, life)


def summed_progress(
    operation_id: str,
    reads: ProgressReads,
    summaries: Sequence[PairSummary],
    best: MeasurementRow | None,
    space: SpaceState | None = None,
) -> OperationProgress:
    """The progress of one operation from what `progress_reads` named: its pairs summed up by
    the store, and its best result's row. The same progress as `operation_progress` gives from
    every measurement row, read in rows per kind of pair rather than per event (a replayed
    table of 10^5 rows is read as a handful)."""
    life = reads.life
    ended = life.ended_at is not None
    counts = summed_counts(summaries, life.parameters.max_retries, ended=ended)
    best_so_far_ = best_so_far([best] if best is not None else [], life.parameters, space)
    return _progress(operation_id, life, counts, best_so_far_, space)


def before_end(rows: Sequence[MeasurementRow], ended_at: datetime | None) -> list[MeasurementRow]:
    """The measurement rows of what the operation received before it ended (every row while
    it runs): see the module doc."""
    return list(rows) if ended_at is None else [r for r in rows if r.occurred_at <= ended_at]


def retries_of(rows: Sequence[OperationRow]) -> dict[str, Retries]:
    """By operation id (of `rows`, several operations' lifecycles), whether it retries a
    retryable failure: its `max_retries`, and whether it has ended."""
    by_operation: dict[str, list[OperationRow]] = {}
    for row in rows:
        by_operation.setdefault(row.operation_id, []).append(row)
    retries = {}
    for operation_id, lifecycle in by_operation.items():
        life = _Lifecycle.of(lifecycle)
        retries[operation_id] = Retries(life.parameters.max_retries, life.ended_at is not None)
    return retries


def ended_at(lifecycle: Sequence[OperationRow]) -> datetime | None:
    """When the operation completed or failed; None while it runs."""
    return _Lifecycle.of(lifecycle).ended_at


def reported_progress(
    operation_id: str, lifecycle: Sequence[OperationRow], space: SpaceState | None = None
) -> OperationProgress | None:
    """An ended operation as the explorer reported it (counts, best), reading no result.

    None while the operation runs, or when its end carried no counts.
    """
    life = _Lifecycle.of(lifecycle)
    ended = life.payloads.get("OperationCompleted") or life.payloads.get("OperationFailed")
    if ended is None or ended.get("counts") is None:
        return None
    reported = {name: int(value) for name, value in ended["counts"].items()}
    settled = sum(reported.get(name, 0) for name in ("measured", "reused", "failed"))
    cancelled = max(reported.get("requested", 0) - settled, 0)
    counts = OperationCountsView(**reported, in_flight=0, cancelled=cancelled)
    best = _reported_best(ended, life.parameters, space)
    return _progress(operation_id, life, counts, best, space)


def _progress(
    operation_id: str,
    life: _Lifecycle,
    counts: OperationCountsView,
    best: BestSoFar | None,
    space: SpaceState | None,
    measured_space: str | None = None,
) -> OperationProgress:
    parameters = life.parameters
    return OperationProgress(
        operation_id=operation_id,
        parent_operation_id=life.get("OperationRequested", "parent_operation_id"),
        space_id=life.first("space_id", *_WITH_SPACE) or measured_space,
        operator=life.first("operator", "OperationStarted", "OperationRequested"),
        status=life.status,
        requested_by=life.get("OperationRequested", "requested_by"),
        parameters=parameters.model_dump(mode="json"),
        requested_at=life.times.get("OperationRequested"),
        started_at=life.times.get("OperationStarted"),
        ended_at=life.ended_at,
        counts=counts,
        done=counts.done,
        total=_total(life, counts, planned_pairs(parameters, space)),
        best=best,
        choice=life.get("OperationCompleted", "choice"),
        stop_reason=life.get("OperationCompleted", "stop_reason"),
        stop_detail=life.get("OperationCompleted", "stop_detail") or "",
        failure_reason=life.get("OperationFailed", "reason"),
    )


FINISHED_PLAN = frozenset({"requested_entities_measured", "space_exhausted", "operator_finished"})
"""Stop reasons that say the operation settled all it was going to: its total is then what it
settled, not the plan (a dependent experiment skipped where its dependency gave no valid result
is planned and never settled: a walk that measured all it could read 12/16)."""


def _total(life: _Lifecycle, counts: OperationCountsView, planned: int | None) -> int | None:
    if life.get("OperationCompleted", "stop_reason") in FINISHED_PLAN:
        return counts.done + counts.cancelled
    return planned


def _space_of(measurements: Sequence[MeasurementRow]) -> str | None:
    return measurements[0].space_id if measurements else None


def pair_counts(
    rows: Sequence[MeasurementRow], max_retries: int, ended: bool = False
) -> OperationCountsView:
    """Counts per entity-experiment pair (see the module doc); once the operation has `ended`,
    what is still in flight in `rows` is cancelled."""
    by_request: dict[str, list[MeasurementRow]] = {}
    for row in rows:
        by_request.setdefault(row.request_id, []).append(row)
    return summed_counts([_summary(pair) for pair in by_request.values()], max_retries, ended)


def summed_counts(
    summaries: Sequence[PairSummary], max_retries: int, ended: bool = False
) -> OperationCountsView:
    """The counts of pairs summed up as `queries.pair_summaries` reads them (the store sums
    them up for one operation's progress; `pair_counts` from the rows, by the same rule)."""
    outcomes: dict[str, int] = dict.fromkeys(("valid", "invalid", "reused", "failed"), 0)
    unsettled = 0
    for summary in summaries:
        outcome = _outcome(summary, max_retries)
        if outcome == "in_flight":
            unsettled += summary.pairs
        else:
            outcomes[outcome] += summary.pairs
    return OperationCountsView(
        requested=sum(summary.pairs for summary in summaries),
        measured=outcomes["valid"] + outcomes["invalid"],
        reused=outcomes["reused"],
        failed=outcomes["failed"],
        invalid=outcomes["invalid"],
        in_flight=0 if ended else unsettled,
        cancelled=unsettled if ended else 0,
    )


def _latest_first(row: MeasurementRow) -> tuple[int, int, datetime, bool]:
    """A pair's rows by attempt, then the order a measurement's events happen in (`STAGE`),
    then time, a failure last."""
    return (row.attempt, STAGE.get(row.kind, 0), row.occurred_at, row.kind == "failed")


def _summary(rows: Sequence[MeasurementRow]) -> PairSummary:
    """One pair's rows summed up as the store sums them up (`queries.pair_summaries`): its
    first result counts, as the explorer counts it (a pair answered twice, a redelivered
    attempt completing beside its retry, was counted by its later result too)."""
    latest = max(rows, key=_latest_first)
    results = [row for row in rows if row.kind in RESULT_KINDS]
    first = min(results, key=lambda row: (row.occurred_at, row.event_id)) if results else None
    completed = first is not None and first.kind == "completed"
    return PairSummary(
        completed=completed,
        valid=completed and first is not None and bool(first.is_valid),
        reused=first is not None and first.kind == "reused",
        kind=latest.kind,
        retryable=latest.retryable,
        attempt=latest.attempt,
        pairs=1,
    )


def _outcome(pair: PairSummary, max_retries: int) -> str:
    if pair.completed:
        return "valid" if pair.valid else "invalid"
    if pair.reused:
        return "reused"
    final = pair.kind == "failed" and gives_up(pair.retryable, pair.attempt, max_retries)
    return "failed" if final else "in_flight"


def planned_pairs(parameters: OperationParameters, space: SpaceState | None) -> int | None:
    """Entity-experiment pairs the operation plans to settle; None when it cannot be known.

    An operation that lists its entities (`options.points`, the `points` operator a pipeline's
    measure job runs) plans each of them once."""
    if space is None or space.spec is None:
        return None
    experiments = len(space.spec.measurement_space)
    listed = listed_entities(parameters)
    if listed is not None:
        return listed * experiments
    wanted = parameters.number_entities
    if wanted == "all":
        return None if space.size is None else space.size * experiments
    return (wanted if space.size is None else min(wanted, space.size)) * experiments


def listed_entities(parameters: OperationParameters) -> int | None:
    """How many distinct entities `options.points` lists; None when it lists none."""
    points = parameters.options.get("points")
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        return None
    try:
        return len({Entity.of(point).id for point in points})
    except DiscospaceError:
        return None


def best_so_far(
    rows: Sequence[MeasurementRow],
    parameters: OperationParameters,
    space: SpaceState | None = None,
) -> BestSoFar | None:
    """The best valid result for the objective (the first to reach it wins ties)."""
    objective = parameters.objective
    source = None if objective is None else objective_source_in(objective, space)
    if objective is None or source is None:
        return None
    best: BestSoFar | None = None
    for result in results_of(first_results(rows)):
        value = result_value(result, source)
        if value is not None and objective.improves(value, best.value if best else None):
            entity, experiment = result.entity_id, result.experiment_id
            best = _best(objective, value, entity, result.entity_values, experiment, result.values)
    return best


def objective_source_in(objective: Objective, space: SpaceState | None) -> ObjectiveSource | None:
    """Where the objective's values come from in `space` (see the module doc without one)."""
    return objective_source(objective.property, observed_ids(space))


def observed_ids(space: SpaceState | None) -> tuple[str, ...] | None:
    """The space's observed property ids in declared order; None when it cannot be known."""
    if space is None or space.spec is None or space.space_id is None:
        return None
    try:
        layout = SpaceLayout.of(space)
    except DiscospaceError:
        return None
    return tuple(column.observed_id for column in layout.observed)


@dataclass(frozen=True)
class RowResult:
    """A completed or reused measurement row, read as a result (values parsed)."""

    entity_id: str
    experiment_id: str
    is_valid: bool
    values: Mapping[str, Any]
    entity_values: Mapping[str, Any]


RESULT_KINDS = ("completed", "reused")


def first_results(rows: Sequence[MeasurementRow]) -> list[MeasurementRow]:
    """The first result row of each pair (by time, then event id), in time order: what the
    explorer counts and names its best from."""
    ordered = sorted(
        (row for row in rows if row.kind in RESULT_KINDS),
        key=lambda row: (row.occurred_at, row.event_id),
    )
    seen: set[str] = set()
    first = []
    for row in ordered:
        if row.request_id not in seen:
            seen.add(row.request_id)
            first.append(row)
    return first


def results_of(rows: Sequence[MeasurementRow]) -> list[RowResult]:
    """The results among the rows (completed or reused), in their order."""
    return [
        RowResult(
            row.entity_id,
            row.experiment_id,
            bool(row.is_valid),
            json.loads(row.values),
            json.loads(row.entity_values),
        )
        for row in rows
        if row.kind in ("completed", "reused")
    ]


def _best(
    objective: Objective,
    value: float,
    entity_id: str,
    entity_values: Mapping[str, Any],
    experiment_id: str,
    values: Mapping[str, Any],
) -> BestSoFar:
    return BestSoFar(
        property=objective.property,
        direction=objective.direction,
        value=value,
        entity_id=entity_id,
        entity_values=dict(entity_values),
        experiment_id=experiment_id,
        values=dict(values),
    )


def _reported_best(
    ended: dict[str, Any], parameters: OperationParameters, space: SpaceState | None
) -> BestSoFar | None:
    """The best the explorer reported: its values are the best result's, keyed by target."""
    objective, entity_id = parameters.objective, ended.get("best_entity_id")
    if objective is None or entity_id is None:
        return None
    values = ended.get("best_values") or {}
    source = objective_source_in(objective, space)
    value = as_number(values.get(source.target if source else target_of(objective.property)))
    if value is None:
        return None
    entity_values = ended.get("best_entity_values") or {}
    experiment = source.experiment_id if source else ""
    return _best(objective, value, entity_id, entity_values, experiment, values)
