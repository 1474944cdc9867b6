"""One operation's state: a fold of its events from the operations and measurements topics.

`evolve` records facts only, and tolerates any interleaving of the two topics (each keeps an
operation's history in order, but nothing orders one topic against the other): a measurement
may be folded before the request that caused it. Events already folded (same event id) are
dropped, so the explorer can fold its own decisions at once and again when it reads them back.

A pipeline's job events (`PipelineJobStarted`, `PipelineJobCompleted`, `PipelineJobFailed`)
are folded into `jobs`, by (trial, job): the first start and the first end of each job count.
A child operation (its request names a parent) keeps its results once finished, for its
parent to read (`keep_results`, `kept_results`); other operations forget them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import singledispatch
from typing import TYPE_CHECKING, TypeAlias

from discospace.core import entity_id, parameterized_experiment_id
from discospace.core.spec import ExperimentRef
from discospace.events import (
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementReused,
    MeasurementStarted,
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    OperationStarted,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
    SamplesDrawn,
    SamplesRequested,
    SpaceSubmitted,
)
from discospace.events.common import OperationEvent, PropertyValues
from discospace.explorer.domain.objective import ObjectiveTracker
from discospace.explorer.domain.pairs import PairFacts, PairKey, PairResult
from discospace.explorer.domain.training import TrainingTally

if TYPE_CHECKING:
    from discospace.explorer.domain.entity_progress import EntityProgress

OperationInput: TypeAlias = (
    OperationRequested
    | OperationCancelRequested
    | OperationStarted
    | SamplesRequested
    | SamplesDrawn
    | OperationCompleted
    | OperationFailed
    | PipelineJobStarted
    | PipelineJobCompleted
    | PipelineJobFailed
)
MeasurementInput: TypeAlias = (
    MeasurementStarted | MeasurementCompleted | MeasurementFailed | MeasurementReused
)
Decision: TypeAlias = OperationStarted | SamplesRequested | OperationCompleted | OperationFailed
"""The decisions every operation makes (the engine's), compared slot by slot (`conflicts.py`)."""
Conducting: TypeAlias = (
    PipelineJobStarted
    | PipelineJobCompleted
    | PipelineJobFailed
    | OperationRequested
    | OperationCancelRequested
    | SpaceSubmitted
)
"""What an operator that runs other operations (a pipeline) decides besides: its jobs, its
child operations' requests and cancellations, and the spaces it submits to the registry."""
Published: TypeAlias = Decision | Conducting
"""Everything the explorer publishes."""
JobKey = tuple[int | None, str]
"""(trial or None, job name): a job of a pipeline."""
JobEnd: TypeAlias = PipelineJobCompleted | PipelineJobFailed


@dataclass
class JobFacts:
    """What a pipeline's log says of one of its jobs: the first start and the first end."""

    started: PipelineJobStarted | None = None
    ended: JobEnd | None = None


@dataclass
class Draws:
    """Totals of the requests for `count` more entities by strategy, kept as they are folded."""

    asked: int = 0
    """Entities asked for so far: the position of the next draw in the strategy's sequence."""
    waiting: dict[int, int] = field(default_factory=dict)
    """Request index -> count, for requests the sampler has not answered yet."""
    drawn: int = 0
    """Entities the sampler drew for them (fewer than asked at the end of a space)."""
    exhausted: bool = False

    @property
    def undrawn(self) -> int:
        return sum(self.waiting.values())


@dataclass
class OperationState:
    """What the explorer knows of one operation."""

    operation_id: str
    requested: OperationRequested | None = None
    noticed_at: datetime | None = None
    """When the explorer first folded the request (its clock, not the requester's)."""
    started: OperationStarted | None = None
    cancel: OperationCancelRequested | None = None
    finished: OperationCompleted | OperationFailed | None = None
    requests: dict[int, SamplesRequested] = field(default_factory=dict)
    next_request_index: int = 0
    drawn: dict[int, SamplesDrawn] = field(default_factory=dict)
    draws: Draws = field(default_factory=Draws)
    entities: dict[str, PropertyValues | None] = field(default_factory=dict)
    """Every entity of the operation, in the order it became known; values once seen."""
    pairs: dict[PairKey, PairFacts] = field(default_factory=dict)
    outcomes: list[PairResult] = field(default_factory=list)
    """Results in the order of the measurements topic (the same on every replay)."""
    seen: set[str] = field(default_factory=set)
    open: dict[str, None] = field(default_factory=dict)
    """Entities not found settled yet (settled is final), in the order they became known;
    the engine removes those it finds settled, so it never examines them again."""
    tracker: ObjectiveTracker | None = None
    """Derived when deciding: best-so-far, read incrementally over `outcomes`."""
    training: TrainingTally | None = None
    """Derived when deciding: what the results trained, for `max_training`, read likewise."""
    unconfirmed: set[str] = field(default_factory=set)
    """Ids of the decisions this explorer made and has not read back from the log yet."""
    jobs: dict[JobKey, JobFacts] = field(default_factory=dict)
    """A pipeline's jobs, in the order they started (kept once finished: its parent reads them)."""
    kept: set[PairKey] | None = None
    """Once a child operation finished: the pairs of `outcomes`, which it keeps (None: not kept)."""
    changed: set[str] = field(default_factory=set)
    """Entities whose facts or values changed since the engine last read their progress: it
    reads only those again, so a decision round costs what changed, not the whole window."""
    progress: dict[str, EntityProgress] = field(default_factory=dict)
    """Derived when deciding: the progress of each entity of `open`, as of its last change."""
    actionable: set[str] = field(default_factory=set)
    """Derived when deciding: the entities of `open` with a step to act on (a dependent
    experiment ready, a retry due)."""

    @property
    def parent_id(self) -> str | None:
        """The operation that asked for this one (a pipeline), if any."""
        return self.requested.parent_operation_id if self.requested else None

    def pair(self, key: PairKey) -> PairFacts:
        """The facts of a pair, to change: its entity's progress is read again."""
        self.changed.add(key[0])
        return self.pairs.setdefault(key, PairFacts())

    def know(self, entity: str, values: PropertyValues | None = None) -> None:
        if entity not in self.entities:
            self.open[entity] = None
            self.changed.add(entity)
        if values is not None:
            if self.entities.get(entity) is None:
                self.changed.add(entity)
            self.entities[entity] = values
        else:
            self.entities.setdefault(entity, None)

    def waits_for(self, space_id: str) -> bool:
        """Requested on `space_id` and not started: the space may be what it waits for."""
        return self.started is None and bool(self.requested and self.requested.space_id == space_id)

    def forget_details(self, keep_results: bool = False) -> None:
        """Once finished, only the request, start and end matter: free the rest. A child
        operation keeps its results (`keep_results`): its parent reads them."""
        for details in (self.requests, self.drawn, self.entities, self.pairs, self.open):
            details.clear()
        for derived in (self.changed, self.progress, self.actionable):
            derived.clear()
        self.seen.clear()
        self.unconfirmed.clear()
        if keep_results:
            self.kept = {(o.entity_id, o.experiment_id) for o in self.outcomes}
        else:
            self.drop_results()
        self.draws = Draws()
        self.tracker = None
        self.training = None

    def drop_results(self) -> None:
        self.outcomes = []
        self.kept = None

    def would_keep(self, event: OperationEvent) -> bool:
        """Whether a finished child operation keeps this result: the first of its pair."""
        return (
            self.kept is not None
            and isinstance(event, MeasurementCompleted | MeasurementReused)
            and (event.entity_id, event.experiment_id) not in self.kept
        )

    def keep(self, event: MeasurementCompleted | MeasurementReused) -> bool:
        """Keep a result read after the operation finished; False when it keeps none."""
        if not self.would_keep(event):
            return False
        assert self.kept is not None
        self.kept.add((event.entity_id, event.experiment_id))
        self.outcomes.append(PairResult.of(event))
        return True

    def kept_results(self) -> tuple[PairResult, ...] | None:
        """A finished operation's results: those it counted at its end, in the order of the
        measurements topic; None while some of them are still to be read.

        The end counts `measured + reused` results: the first that many results of the
        operation's partition (first per pair), the same set for every reader, however the
        topics interleave and whatever landed after the end.
        """
        finished = self.finished
        if finished is None:
            return None
        counted = finished.counts
        if counted is None:
            return tuple(self.outcomes)
        wanted = counted.measured + counted.reused
        if len(self.outcomes) < wanted:
            return None
        return tuple(self.outcomes[:wanted])


def evolve(state: OperationState, event: OperationEvent) -> bool:
    """Fold `event` into its operation's state; False when it was already folded."""
    if event.event_id in state.seen:
        return False
    state.seen.add(event.event_id)
    _fold(event, state)
    return True


def experiment_id_of(ref: ExperimentRef) -> str:
    return parameterized_experiment_id(ref.experiment, ref.parameterization)


@singledispatch
def _fold(event: OperationEvent, state: OperationState) -> None:
    """Events the explorer does not need (none yet) change nothing."""


@_fold.register
def _(event: OperationRequested, state: OperationState) -> None:
    state.requested = state.requested or event


@_fold.register
def _(event: OperationStarted, state: OperationState) -> None:
    state.started = state.started or event


@_fold.register
def _(event: OperationCancelRequested, state: OperationState) -> None:
    state.cancel = state.cancel or event


@_fold.register(OperationCompleted)
@_fold.register(OperationFailed)
def _(event: OperationCompleted | OperationFailed, state: OperationState) -> None:
    state.finished = state.finished or event


@_fold.register
def _(event: SamplesRequested, state: OperationState) -> None:
    if event.request_index in state.requests:
        return
    state.requests[event.request_index] = event
    state.next_request_index = max(state.next_request_index, event.request_index + 1)
    if event.count is not None:
        _count_request(state, event.request_index, event.count)
    for point in event.points or ():
        entity = entity_id(point)
        state.know(entity, dict(point))
        for ref in event.experiments:
            facts = state.pair((entity, experiment_id_of(ref)))
            if facts.first_request_index is None or event.attempt == 1:
                facts.first_request_index = event.request_index
            if event.attempt >= facts.requested_attempt:
                facts.requested_attempt = event.attempt
                facts.request_index = event.request_index
                facts.rejected = None


def _count_request(state: OperationState, index: int, count: int) -> None:
    state.draws.asked += count
    answer = state.drawn.get(index)
    if answer is None:
        state.draws.waiting[index] = count
    else:
        _count_answer(state.draws, answer)


def _count_answer(draws: Draws, answer: SamplesDrawn) -> None:
    draws.waiting.pop(answer.request_index, None)
    draws.drawn += len(answer.entity_ids)
    draws.exhausted = draws.exhausted or answer.exhausted


@_fold.register
def _(event: SamplesDrawn, state: OperationState) -> None:
    if event.request_index in state.drawn:
        return
    state.drawn[event.request_index] = event
    for entity in event.entity_ids:
        state.know(entity)
    request = state.requests.get(event.request_index)
    if request is not None and request.count is not None:
        _count_answer(state.draws, event)
    if request is not None and request.points:
        _reject_points_not_drawn(state, request, event)


def _reject_points_not_drawn(
    state: OperationState, request: SamplesRequested, drawn: SamplesDrawn
) -> None:
    reason = "; ".join(drawn.rejected_points) or "it was not drawn"
    for point in request.points or ():
        entity = entity_id(point)
        if entity in drawn.entity_ids:
            continue
        for ref in request.experiments:
            facts = state.pair((entity, experiment_id_of(ref)))
            if facts.request_index == request.request_index:
                facts.rejected = reason


@_fold.register
def _(event: PipelineJobStarted, state: OperationState) -> None:
    facts = state.jobs.setdefault((event.trial, event.job), JobFacts())
    facts.started = facts.started or event


@_fold.register(PipelineJobCompleted)
@_fold.register(PipelineJobFailed)
def _(event: JobEnd, state: OperationState) -> None:
    facts = state.jobs.setdefault((event.trial, event.job), JobFacts())
    facts.ended = facts.ended or event


@_fold.register
def _(event: MeasurementStarted, state: OperationState) -> None:
    state.know(event.entity_id, dict(event.entity_values))


@_fold.register(MeasurementCompleted)
@_fold.register(MeasurementReused)
def _(event: MeasurementCompleted | MeasurementReused, state: OperationState) -> None:
    state.know(event.entity_id, dict(event.entity_values))
    facts = state.pair((event.entity_id, event.experiment_id))
    if facts.outcome is None:
        facts.outcome = PairResult.of(event)
        state.outcomes.append(facts.outcome)


@_fold.register
def _(event: MeasurementFailed, state: OperationState) -> None:
    state.know(event.entity_id, dict(event.entity_values))
    state.pair((event.entity_id, event.experiment_id)).failures.setdefault(event.attempt, event)
