"""The engine: from an operation's folded state and the time, the explorer's next decisions.

Every decision is a function of the folded state: the next request index is one past the
highest folded, the next draw position the sum of counts already asked for, and event ids derive
from the operation's `OperationStarted` and the request index. A restarted explorer that folds
the same history therefore re-decides what it had not published yet, with the same ids, and
nothing it had. Decisions are folded into the state as they are made, so a decision is never
taken twice while it is being published; the caller must publish them in order.

What the engine does for every operator: keeps at most `batch_size` entities in flight and
refills the window as results arrive (continuous batching); retries transient failures with
backoff; requests dependent experiments for an entity once those they depend on completed
validly; applies the stopping rules and cancellation; completes with counts and the best entity.

Cancellation winds the operation down rather than cutting it off: from the cancel on, nothing
more is requested (no draw, no retry, no dependent experiment), and the operation completes
(`cancelled`) once every measurement it had in flight has landed: measured, reused, or failed
(an actuator answers a request of a cancelled operation it had not started with a failure
that is not retried, "operation cancelled"). The counts of its `OperationCompleted` are then
final, and agree with the projector's. A measurement that takes longer than `cancel_wait_s`
after the cancel is not waited for: the operation completes, counting it `cancelled`, and its
result still lands in the sample store when it comes.

An operation a pipeline runs (a child) ends at once when cancelled, as before: its pipeline
moves on (or ends) without waiting; what it had in flight still lands in the sample store, and
is counted `cancelled` in its end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from discospace.core import DiscospaceError, ParameterizedExperiment
from discospace.events import (
    MAX_MESSAGE_BYTES,
    EventTooLargeError,
    OperationCompleted,
    OperationFailed,
    SamplesRequested,
    encode_within,
)
from discospace.events.common import PropertyValues
from discospace.events.envelope import MAX_OPERATION_REASON_CHARS, shortened
from discospace.explorer.domain.entity_progress import (
    EntityProgress,
    Ready,
    counts,
    entity_progress,
    inputs_for,
    refused,
)
from discospace.explorer.domain.objective import ObjectiveTracker
from discospace.explorer.domain.operation import Decision, OperationState, Published, evolve
from discospace.explorer.domain.operator import (
    Chooser,
    Draw,
    Finish,
    Measure,
    OperationView,
    Operator,
    OperatorRegistry,
    Proposal,
    Wait,
)
from discospace.explorer.domain.pairs import InFlight, PairResult, RetryDue, RetryPolicy
from discospace.explorer.domain.sample_store import SampleStores
from discospace.explorer.domain.spaces import KnownSpace, SpaceEntry
from discospace.explorer.domain.starting import (
    WaitForSpace,
    cancelled_before_start,
    refuse,
    start,
)
from discospace.explorer.domain.stopping import Stop, deadline, rule_met, seconds_text
from discospace.explorer.domain.training import TrainingTally

MAX_DRAW = 2_000
"""The most entities one `SamplesRequested` asks the sampler for: its answer (`SamplesDrawn`)
lists every entity drawn, so a larger window (`batch_size`) is asked for in several requests.
2,000 entity ids are about 40 kB as a message, within the smallest message limit (64 KiB)."""


@dataclass(frozen=True)
class Timing:
    """Waits the engine applies (explorer settings, not part of any decision's content)."""

    retry_backoff_s: float = 1.0
    """Wait before the first retry of a transient failure; doubles with each attempt."""
    retry_backoff_max_s: float = 60.0
    space_wait_s: float = 30.0
    """How long an operation waits for its space to be read before it is refused."""
    cancel_wait_s: float = 600.0
    """How long a cancelled operation waits for its measurements in flight to land."""


@dataclass(frozen=True)
class Engine:
    """What the engine decides with: the operators it knows and its timing."""

    operators: OperatorRegistry
    timing: Timing = Timing()
    max_message_bytes: int = MAX_MESSAGE_BYTES
    """The largest decision it may publish (the explorer's `max_message_bytes`). A decision
    over it would be refused by the publisher every time, and decisions are published in
    order: one would stop every operation. So a decision that would not fit fails its
    operation instead (`_emit`), and the text operators write into ends is cut short
    (`MAX_OPERATION_REASON_CHARS`), so a failure always fits."""


@dataclass
class Decided:
    """Decisions to publish, in order, and when to decide again if nothing arrives before."""

    events: list[Published] = field(default_factory=list)
    wake_at: datetime | None = None

    def wake(self, at: datetime | None) -> None:
        if at is not None and (self.wake_at is None or at < self.wake_at):
            self.wake_at = at

    def merge(self, other: Decided) -> None:
        self.events.extend(other.events)
        self.wake(other.wake_at)


def decide(
    state: OperationState,
    spaces: dict[str, SpaceEntry],
    engine: Engine,
    now: datetime,
    store: SampleStores | None = None,
) -> Decided:
    """The operation's next decisions at `now`, already folded into `state`.

    `store` holds the results of the sample stores, which operators may warm-start from.
    """
    decided = Decided()
    if begin(state, spaces, engine, now, decided):
        _run(state, spaces, engine, now, decided, store)
    return decided


def begin(
    state: OperationState,
    spaces: dict[str, SpaceEntry],
    engine: Engine,
    now: datetime,
    decided: Decided,
) -> bool:
    """Start the operation when it has not started (or refuse it, or note when to decide
    again); True when it runs: started and not finished."""
    if state.requested is None or state.finished is not None:
        return False
    limit = engine.max_message_bytes
    if state.started is None and state.cancel is not None:
        end = cancelled_before_start(state.requested, state.cancel, now)
        _emit_or_refuse(state, decided, end, "cancellation", now, limit)
        return False
    if state.started is None:
        wait = timedelta(seconds=engine.timing.space_wait_s)
        deadline = (state.noticed_at or now) + wait
        first = start(state.requested, spaces, engine.operators, deadline, now)
        if isinstance(first, WaitForSpace):
            decided.wake(first.until)
            return False
        _emit_or_refuse(state, decided, first, "start", now, limit)
    return state.finished is None


def _emit_or_refuse(
    state: OperationState, decided: Decided, event: Decision, what: str, now: datetime, limit: int
) -> None:
    """Emit the operation's first decision, or refuse its request when that decision would
    not fit a message (never left undecided: it would stop every operation)."""
    assert state.requested is not None
    try:
        _emit(state, decided, event, limit)
    except EventTooLargeError as error:
        reason = f"its {what} would be too large to publish: {error}"
        _emit(state, decided, refuse(state.requested, reason, now), limit)


def _emit(state: OperationState, decided: Decided, event: Decision, limit: int) -> None:
    """Fold `event` and add it to what is published; `EventTooLargeError`, with nothing
    folded, when it would not fit a message. A failure always fits: its reason is cut short
    where it is made."""
    if not isinstance(event, OperationFailed):
        encode_within(event, limit)
    evolve(state, event)
    state.unconfirmed.add(event.event_id)
    decided.events.append(event)


def failure_text(error: Exception) -> str:
    """An operator's error as the end of a sentence: a `DiscospaceError` says it already; any
    other (a bug) is named by its type, so its operation fails and every other goes on."""
    if isinstance(error, DiscospaceError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def operator_failure(name: str, error: Exception) -> str:
    """Why an operator's round failed, as an operation's failure reason (cut short)."""
    if isinstance(error, EventTooLargeError):
        reason = f"operator '{name}' asked for a decision too large to publish: {error}"
    else:
        reason = f"operator '{name}' failed: {failure_text(error)}"
    return shortened(reason, MAX_OPERATION_REASON_CHARS)


def _run(
    state: OperationState,
    spaces: dict[str, SpaceEntry],
    engine: Engine,
    now: datetime,
    decided: Decided,
    store: SampleStores | None,
) -> None:
    started = state.started
    assert started is not None
    space, operator = spaces.get(started.space_id), engine.operators.get(started.operator)
    if not isinstance(space, KnownSpace) or not isinstance(operator, Operator):
        reason = f"space '{started.space_id}' or operator '{started.operator}' is no longer known"
        event = OperationFailed.caused_by(
            started, now, operation_id=state.operation_id, reason=reason
        )
        return _emit(state, decided, event, engine.max_message_bytes)
    running = _Running(state, space, operator, engine, now, decided, store)
    try:
        running.step()
    except Exception as error:  # an operator's bug fails its operation, never the explorer
        running.fail(operator_failure(operator.name, error))


class _Running:
    """One decision round of a started operation."""

    def __init__(
        self,
        state: OperationState,
        space: KnownSpace,
        operator: Operator,
        engine: Engine,
        now: datetime,
        decided: Decided,
        store: SampleStores | None = None,
    ) -> None:
        assert state.started is not None
        timing, self.limit = engine.timing, engine.max_message_bytes
        self.state, self.space, self.operator, self.store = state, space, operator, store
        self.started, self.now, self.decided = state.started, now, decided
        self.parameters = self.started.parameters
        self.policy = RetryPolicy(
            self.parameters.max_retries, timing.retry_backoff_s, timing.retry_backoff_max_s
        )
        self.cancel_wait = timedelta(seconds=timing.cancel_wait_s)

    def step(self) -> None:
        cancel = self.state.cancel
        if cancel is not None and self.state.parent_id is not None:
            self.complete(_cancelled(self.state))
            return
        if cancel is not None:
            self.wind_down(cancel.occurred_at + self.cancel_wait)
            return
        stop = self._stop()
        if stop is not None:
            self.complete(stop)
            return
        self._settle()
        self.follow_up()
        in_flight = self.state.draws.undrawn + len(self.state.open)
        proposal = self.operator.propose(self._view(in_flight))
        in_flight += self.act(proposal, self._free_slots(in_flight))
        if in_flight == 0 and isinstance(proposal, Finish):
            self.complete(Stop(proposal.reason, proposal.detail))
        elif in_flight == 0:
            self.fail(
                f"operator '{self.operator.name}' {_idle(proposal)} while nothing is in flight"
            )
        else:
            self.decided.wake(deadline(self.parameters.stopping, self.started_at))

    def wind_down(self, until: datetime) -> None:
        """Cancelled: request nothing more; complete once nothing is in flight, or at `until`
        (the measurements still in flight then are counted cancelled)."""
        self._settle()
        progress = self.state.progress
        measuring = sum(_in_flight(progress[e]) for e in self.state.open)
        undrawn = self.state.draws.undrawn
        if measuring + undrawn == 0:
            self.complete(_cancelled(self.state))
        elif self.now >= until:
            wait_s = self.cancel_wait.total_seconds()
            parts = [f"{measuring} in flight"] if measuring else []
            if undrawn:  # no count holds them: the sampler never named them
                parts.append(f"{undrawn} {'entity' if undrawn == 1 else 'entities'} never drawn")
            waited = f"stopped waiting for {' and '.join(parts)} after {seconds_text(wait_s)} s"
            self.complete(_cancelled(self.state, waited))
        else:
            self.decided.wake(until)

    def _stop(self) -> Stop | None:
        """The first stopping rule met."""
        rules, outcomes = self.parameters.stopping, self.state.outcomes
        return rule_met(
            rules, outcomes, self._tracker(), self.started_at, self.now, self._training()
        )

    @property
    def started_at(self) -> datetime:
        return self.started.occurred_at

    # -- state ---------------------------------------------------------------------------------

    def _settle(self) -> None:
        """Read again the progress of the entities whose facts changed: those found settled
        leave `open` (settled is final); the others' progress is kept, and whether a step of
        theirs is to act on (`actionable`)."""
        state = self.state
        for entity in state.changed:
            if entity not in state.open:
                continue
            progress = entity_progress(state, self.space, self.policy, entity)
            if progress.settled:
                del state.open[entity]
                state.progress.pop(entity, None)
                state.actionable.discard(entity)
                continue
            state.progress[entity] = progress
            if any(isinstance(step, Ready | RetryDue) for step in progress.steps.values()):
                state.actionable.add(entity)
            else:
                state.actionable.discard(entity)
        state.changed.clear()

    def _tracker(self) -> ObjectiveTracker | None:
        objective = self.parameters.objective
        if objective is None:
            return None
        if self.state.tracker is None:
            source = self.space.measures(objective.property)
            if source is None:
                return None
            patience = self.parameters.stopping.no_improvement
            self.state.tracker = ObjectiveTracker(objective, source, patience, self.space.needs)
        self.state.tracker.update(self.state.outcomes)
        return self.state.tracker

    def _training(self) -> TrainingTally | None:
        if self.state.training is None:
            self.state.training = TrainingTally.of(self.parameters.stopping)
        if self.state.training is not None:
            self.state.training.update(self.state.outcomes, self.space)
        return self.state.training

    def _free_slots(self, in_flight: int) -> int:
        """Entities the window has room for: `batch_size` less those in flight, and no more
        than `max_measurements` can still count (each entity in flight taken to bring a result
        of every experiment): near the end of the budget the window filled to `batch_size`
        anyway, with measurements that could never count, reported cancelled, whose actuators
        went on running them."""
        free = max(0, self.parameters.batch_size - in_flight)
        budget = self.parameters.stopping.max_measurements
        if budget is None:
            return free
        per_entity = max(1, len(self.space.experiments))
        left = budget - len(self.state.outcomes) - in_flight * per_entity
        return min(free, max(0, -(-left // per_entity)))

    def _view(self, in_flight: int) -> OperationView:
        draws = self.state.draws
        return OperationView(
            operation_id=self.state.operation_id,
            parameters=self.parameters,
            space=self.space,
            started_at=self.started_at,
            now=self.now,
            free_slots=self._free_slots(in_flight),
            in_flight=in_flight,
            drawn_by_strategy=draws.asked,
            entities_drawn=draws.drawn,
            exhausted=draws.exhausted,
            entities=self.state.entities,
            outcomes=self.state.outcomes,
            best=self.state.tracker.best if self.state.tracker else None,
            store_results=self._store_results(),
            store_elsewhere=self._store_elsewhere(),
            unsettled=frozenset(self.state.open),
            request_controls=self._first_inputs,
        )

    def _store_results(self) -> tuple[PairResult, ...]:
        if self.store is None:
            return ()
        return self.store.results_for(self.space, self.state.operation_id, self.started_at)

    def _store_elsewhere(self) -> tuple[PairResult, ...]:
        if self.store is None:
            return ()
        return self.store.results_elsewhere(self.space, self.state.operation_id, self.started_at)

    # -- decisions -----------------------------------------------------------------------------

    def follow_up(self) -> None:
        """Retries that are due, and dependent experiments that became ready."""
        for entity in sorted(self.state.actionable):
            progress = self.state.progress[entity]
            values = self.state.entities.get(entity)
            if values is None:
                continue
            ready = [e for e in self.space.experiments if isinstance(progress.steps[e.id], Ready)]
            if ready:
                self.request_points(values, ready, 1, _merged(ready, progress))
            for experiment in self.space.experiments:
                self._retry(values, experiment, progress)

    def _retry(
        self, values: PropertyValues, experiment: ParameterizedExperiment, progress: EntityProgress
    ) -> None:
        step = progress.steps[experiment.id]
        if isinstance(step, RetryDue) and step.at > self.now:
            self.decided.wake(step.at)
        elif isinstance(step, RetryDue):
            inputs = {**self.operator_inputs(progress.entity_id, experiment)}
            inputs.update(inputs_for(experiment, progress))
            self.request_points(values, [experiment], step.attempt, inputs)

    def operator_inputs(self, entity: str, experiment: ParameterizedExperiment) -> PropertyValues:
        """The inputs the first request of this pair carried (the operator's run controls)."""
        return self._first_inputs(entity, experiment.id) or {}

    def _first_inputs(self, entity: str, experiment_id: str) -> PropertyValues | None:
        """The inputs the first request of this pair carried; None when it is not known."""
        facts = self.state.pairs.get((entity, experiment_id))
        first = self.state.requests.get(facts.first_request_index) if facts else None
        if first is None:
            return None
        return dict(first.inputs[0]) if first.inputs else {}

    def act(self, proposal: Proposal, free: int) -> int:
        """Request what the operator proposed, within the free slots; entities requested."""
        if isinstance(proposal, Draw) and min(proposal.count, free) > 0:
            return self.draw(min(proposal.count, free))
        if isinstance(proposal, Measure):
            return self.measure(proposal.points, proposal.inputs, free)
        return 0

    def draw(self, count: int) -> int:
        """Ask the sampler for `count` more entities, at most `MAX_DRAW` a request (each request
        folds at once, so the next one's position follows it)."""
        for first in range(0, count, MAX_DRAW):
            self.request(
                count=min(MAX_DRAW, count - first),
                strategy=self.parameters.sampler,
                seed=self.parameters.seed,
                position=self.state.draws.asked,
                group_by=self.parameters.group_by,
                experiments=tuple(e.to_ref() for e in self.space.independent),
            )
        return count

    def measure(
        self, points: tuple[PropertyValues, ...], inputs: tuple[PropertyValues, ...], free: int
    ) -> int:
        fresh: dict[str, tuple[PropertyValues, PropertyValues]] = {}
        for index, point in enumerate(points):
            entity = self.space.entity_space.normalise(point)
            if entity.id not in self.state.entities:
                controls = dict(inputs[index]) if index < len(inputs) else {}
                fresh.setdefault(entity.id, (entity.as_dict(), controls))
        chosen = list(fresh.values())[:free]
        for values, controls in chosen:
            self.request_points(values, list(self.space.independent), 1, controls)
        return len(chosen)

    def request_points(
        self,
        values: PropertyValues,
        experiments: list[ParameterizedExperiment],
        attempt: int,
        inputs: PropertyValues,
    ) -> None:
        self.request(
            points=(values,),
            experiments=tuple(e.to_ref() for e in experiments),
            attempt=attempt,
            inputs=(inputs,) if inputs else (),
        )

    def request(self, **fields: object) -> None:
        index = self.state.next_request_index
        event = SamplesRequested.caused_by(
            self.started,
            self.now,
            index,
            operation_id=self.state.operation_id,
            space_id=self.started.space_id,
            request_index=index,
            single_measurement=self.parameters.single_measurement,
            **fields,
        )
        _emit(self.state, self.decided, event, self.limit)

    def complete(self, stop: Stop) -> None:
        everything = self._everything()
        tally = counts(self.state, everything)
        tracker = self._tracker()
        best = tracker.best if tracker else None
        summary = (
            f"{tally.measured} measured ({tally.invalid} invalid), {tally.reused} reused, "
            f"{tally.failed} failed"
        )
        cancelled = tally.requested - tally.measured - tally.reused - tally.failed
        summary += f", {cancelled} cancelled (in flight)" if cancelled > 0 else ""
        rejected = refused(self.state)
        summary += f", {rejected} refused by the sampler" if rejected else ""
        training = self._training()
        if training is not None and stop.reason != "max_training":
            summary = f"{training.summary()}; {summary}"
        event = OperationCompleted.caused_by(
            self.started,
            self.now,
            operation_id=self.state.operation_id,
            space_id=self.started.space_id,
            stop_reason=stop.reason,
            stop_detail=f"{shortened(stop.detail, MAX_OPERATION_REASON_CHARS)}; {summary}",
            best_entity_id=best.entity_id if best else None,
            best_entity_values=best.entity_values if best else None,
            best_values=best.values if best else None,
            counts=tally,
            choice=self.operator.choice(self._view(0))
            if isinstance(self.operator, Chooser)
            else None,
        )
        _emit(self.state, self.decided, event, self.limit)

    def fail(self, reason: str) -> None:
        event = OperationFailed.caused_by(
            self.started,
            self.now,
            operation_id=self.state.operation_id,
            reason=shortened(reason, MAX_OPERATION_REASON_CHARS),
            counts=counts(self.state, self._everything()),
        )
        _emit(self.state, self.decided, event, self.limit)

    def _everything(self) -> list[EntityProgress]:
        return [
            entity_progress(self.state, self.space, self.policy, entity)
            for entity in self.state.entities
        ]


def _merged(experiments: list[ParameterizedExperiment], progress: EntityProgress) -> PropertyValues:
    merged: PropertyValues = {}
    for experiment in experiments:
        merged.update(inputs_for(experiment, progress))
    return merged


def _idle(proposal: Proposal) -> str:
    return "waits" if isinstance(proposal, Wait) else "proposed nothing new"


def _in_flight(progress: EntityProgress) -> int:
    """How many of the entity's measurements are awaited from the sampler or an actuator
    (a retry not asked for yet is not: it never will be, once cancelled)."""
    return sum(isinstance(step, InFlight) for step in progress.steps.values())


def _cancelled(state: OperationState, waited: str = "") -> Stop:
    cancel = state.cancel
    assert cancel is not None
    detail = f"cancelled by {cancel.requested_by}" + (f": {cancel.reason}" if cancel.reason else "")
    return Stop("cancelled", f"{detail} ({waited})" if waited else detail)
