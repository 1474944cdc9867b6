"""The explorer's whole state: registered spaces and every operation, and how events move it.

`explore(state, event, engine, now)` folds one event and, once the explorer is live, returns
the decisions it leads to for an operation it owns. While reading the topics at start the
explorer only folds (`state.live` is False): deciding on a partial history could repeat a
decision that is further down the log. `go_live` then decides for every operation it owns at
once, from the complete history.

Every explorer replica folds every operation (its partitions may change, and optimizers warm
start from every result), but decides only for those `state.owns` names: the operations of its
partitions (`service/ownership.py`). One explorer alone owns every operation, the default.

Operations that run other operations (a pipeline: a `Conductor`, `conducting.py`) decide
events for their children too: a child's request or cancellation is folded into the child at
once, and a child this explorer owns is decided in the same round; a child's start or end (or a
result of a finished child) makes its parent, when owned here, decide again. Replies of the
registry to the spaces a conductor submitted (`SpaceRegistered`, `SpaceRejected`) make every
conductor decide again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeAlias

from discospace.events import (
    MeasurementCompleted,
    MeasurementReused,
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    OperationStarted,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    encode_within,
)
from discospace.events.common import OperationEvent
from discospace.events.envelope import MAX_OPERATION_REASON_CHARS, shortened
from discospace.explorer.domain.conducting import (
    ChildView,
    Conduct,
    Conducted,
    Conductor,
    ConductorView,
    derived,
)
from discospace.explorer.domain.decide import Decided, Engine, begin, decide, operator_failure
from discospace.explorer.domain.operation import OperationState, evolve
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.sample_store import SampleStores
from discospace.explorer.domain.spaces import KnownSpace, SpaceEntry, known_space

SpaceAnswer: TypeAlias = SpaceRegistered | SpaceRejected


@dataclass
class ExplorerState:
    """Registered spaces by id, operations by id, and the results of the sample stores."""

    spaces: dict[str, SpaceEntry] = field(default_factory=dict)
    operations: dict[str, OperationState] = field(default_factory=dict)
    store: SampleStores = field(default_factory=SampleStores)
    """Every result of every sample store, from any operation (optimizers warm-start from it)."""
    live: bool = False
    """False while replaying the topics at start: fold, decide nothing."""
    owns: Callable[[str], bool] = field(default=lambda operation_id: True)
    """Whether this explorer decides for an operation (by id); by default for every one."""
    rejected: dict[str, str] = field(default_factory=dict)
    """Why the registry refused a submission, by submission id (a conductor waits for them)."""
    submitted: dict[str, datetime] = field(default_factory=dict)
    """When conductors sent a submission, since this explorer started (not sent again
    while they wait for its answer)."""
    children: dict[str, list[str]] = field(default_factory=dict)
    """Child operations by parent, from requests naming a parent."""

    def operation(self, operation_id: str) -> OperationState:
        known = self.operations.get(operation_id)
        if known is None:  # built only when new: a fold asks for it once per event
            known = self.operations[operation_id] = OperationState(operation_id)
        return known

    def has_folded(self, event: OperationEvent | SpaceAnswer) -> bool:
        """Whether `event` would change nothing: already folded, or its operation is over
        (save a result a finished child operation keeps for its parent)."""
        if isinstance(event, SpaceRegistered):
            return event.space_id in self.spaces
        if isinstance(event, SpaceRejected):
            return event.submission_id in self.rejected
        if isinstance(event, MeasurementCompleted) and not self.store.knows(event):
            return False
        operation = self.operations.get(event.operation_id)
        if operation is None:
            return False
        if event.event_id in operation.seen:
            return True
        return operation.finished is not None and not operation.would_keep(event)

    def active(self) -> list[OperationState]:
        """Operations requested and not finished, in the order they became known."""
        return [op for op in self.operations.values() if op.requested and not op.finished]

    def owned(self) -> list[OperationState]:
        """The active operations this explorer decides for."""
        return [op for op in self.active() if self.owns(op.operation_id)]


def explore(
    state: ExplorerState,
    event: OperationEvent | SpaceAnswer,
    engine: Engine,
    now: datetime,
) -> Decided:
    """Fold `event`; once live, the decisions it leads to (already folded into `state`)."""
    if isinstance(event, SpaceRegistered | SpaceRejected):
        return _on_space(state, event, engine, now)
    if isinstance(event, MeasurementCompleted):
        state.store.record(event)
    operation = state.operation(event.operation_id)
    if operation.finished is not None:
        kept = isinstance(event, MeasurementCompleted | MeasurementReused) and operation.keep(event)
        return _wake_parent(state, operation, engine, now) if kept else Decided()
    if not evolve(operation, event):
        return Decided()
    if isinstance(event, OperationRequested):
        _adopt(state, operation, now)
    if operation.finished is not None:
        forget(state, operation)
    if not state.live:
        return Decided()
    decided = Decided()
    if state.owns(operation.operation_id):
        decided = _decide(state, operation, engine, now)
    if isinstance(event, OperationStarted | OperationCompleted | OperationFailed):
        decided.merge(_wake_parent(state, operation, engine, now))
    return decided


def go_live(state: ExplorerState, engine: Engine, now: datetime) -> Decided:
    """The explorer has read the history: decide for every operation it owns still running."""
    state.live = True
    return tick(state, engine, now)


def tick(state: ExplorerState, engine: Engine, now: datetime) -> Decided:
    """Decide again for every operation it owns (a timer fired: retries due, a deadline
    passed; or it was given partitions)."""
    decided = Decided()
    if state.live:
        for operation in state.owned():
            decided.merge(_decide(state, operation, engine, now))
    return decided


def _on_space(state: ExplorerState, event: SpaceAnswer, engine: Engine, now: datetime) -> Decided:
    if state.has_folded(event):
        return Decided()
    if isinstance(event, SpaceRegistered):
        state.spaces[event.space_id] = known_space(event)
    else:
        state.rejected[event.submission_id] = event.reason
    decided = Decided()
    if state.live:
        for operation in state.owned():
            if _conducts(engine, operation) or (
                isinstance(event, SpaceRegistered) and operation.waits_for(event.space_id)
            ):
                decided.merge(_decide(state, operation, engine, now))
    return decided


def _adopt(state: ExplorerState, operation: OperationState, now: datetime) -> None:
    """A request was folded: note when, and whose child it is."""
    if operation.noticed_at is None:
        operation.noticed_at = now
    parent = operation.parent_id
    if parent is None or operation.operation_id in state.children.get(parent, ()):
        return
    folded = state.operations.get(parent)
    if folded is not None and folded.finished is not None:
        return  # its end, read first (another partition), forgot its children: so is this one
    state.children.setdefault(parent, []).append(operation.operation_id)


def _decide(
    state: ExplorerState, operation: OperationState, engine: Engine, now: datetime
) -> Decided:
    """Decide for `operation`, then for the operations its decisions concern that this
    explorer owns (children it asked for or cancelled; its parent, when it started or ended),
    until nothing more follows."""
    decided = Decided()
    queue = {operation.operation_id: None}
    while queue:
        current = state.operations[next(iter(queue))]
        del queue[current.operation_id]
        made = _decide_one(state, current, engine, now)
        decided.merge(made)
        for concerned in _concerned(state, current, made):
            queue.setdefault(concerned, None)
    return decided


def _decide_one(
    state: ExplorerState, operation: OperationState, engine: Engine, now: datetime
) -> Decided:
    operator = engine.operators.get(operation.requested.operator) if operation.requested else None
    if isinstance(operator, Conductor):
        decided = _conduct(state, operation, operator, engine, now)
    else:
        decided = decide(operation, state.spaces, engine, now, state.store)
    if operation.finished is not None:
        forget(state, operation)
    return decided


def _concerned(state: ExplorerState, operation: OperationState, made: Decided) -> list[str]:
    """Other operations this explorer owns that `made` concerns, still running."""
    found: list[str] = []
    for event in made.events:
        if isinstance(event, SpaceSubmitted):
            continue
        if event.operation_id != operation.operation_id:
            found.append(event.operation_id)
        elif isinstance(event, OperationStarted | OperationCompleted | OperationFailed):
            found.extend(filter(None, [operation.parent_id]))
    return [
        concerned
        for concerned in dict.fromkeys(found)
        if state.owns(concerned) and _running(state, concerned)
    ]


def _running(state: ExplorerState, operation_id: str) -> bool:
    operation = state.operations.get(operation_id)
    return operation is not None and operation.requested is not None and not operation.finished


def _wake_parent(
    state: ExplorerState, operation: OperationState, engine: Engine, now: datetime
) -> Decided:
    """Decide again for the parent of `operation` when this explorer owns it."""
    parent = operation.parent_id
    if parent is None or not state.live or not state.owns(parent) or not _running(state, parent):
        return Decided()
    return _decide(state, state.operations[parent], engine, now)


def _conducts(engine: Engine, operation: OperationState) -> bool:
    requested = operation.requested
    return requested is not None and isinstance(engine.operators.get(requested.operator), Conductor)


def _conduct(
    state: ExplorerState,
    operation: OperationState,
    conductor: Conductor,
    engine: Engine,
    now: datetime,
) -> Decided:
    """One round of a conductor: start it like any operation, then fold what it decides."""
    decided = Decided()
    if not begin(operation, state.spaces, engine, now, decided):
        return decided
    started = operation.started
    assert started is not None
    try:
        conduct = conductor.conduct(_view(state, operation, started, engine, now))
        for event in conduct.events:  # one too large to publish would stop every operation
            encode_within(event, engine.max_message_bytes)
    except Exception as error:  # a conductor's bug fails its operation, never the explorer
        reason = operator_failure(conductor.name, error)
        failed = OperationFailed.caused_by(
            started, now, operation_id=operation.operation_id, reason=reason
        )
        conduct = Conduct([*_cancel_children(state, operation, started, now, reason), failed])
    for event in conduct.events:
        _absorb(state, operation, event, now)
        decided.events.append(event)
    decided.wake(conduct.wake_at)
    return decided


def _cancel_children(
    state: ExplorerState,
    operation: OperationState,
    started: OperationStarted,
    now: datetime,
    reason: str,
) -> list[OperationCancelRequested]:
    """A cancellation of every child of `operation` still running, for a conductor that
    failed: nothing else would stop them (a conductor cancels its children only while it runs),
    and they would go on measuring for an operation that has ended."""
    cancels = []
    for child_id in state.children.get(operation.operation_id, ()):
        child = state.operations.get(child_id)
        if child is None or child.requested is None or child.finished or child.cancel:
            continue
        cancels.append(
            derived(  # the id the conductor's own cancel of the child would have
                OperationCancelRequested,
                started,
                now,
                child_id,
                correlation_id=started.correlation_id,
                operation_id=child_id,
                requested_by=f"operation {operation.operation_id}",
                reason=shortened(
                    f"its parent operation '{operation.operation_id}' failed: {reason}",
                    MAX_OPERATION_REASON_CHARS,
                ),
            )
        )
    return cancels


def _view(
    state: ExplorerState,
    operation: OperationState,
    started: OperationStarted,
    engine: Engine,
    now: datetime,
) -> ConductorView:
    def child(operation_id: str) -> ChildView:
        return ChildView.of(state.operations.get(operation_id) or OperationState(operation_id))

    def prior(operation_id: str) -> tuple[PairResult, ...]:
        held = state.operations.get(operation_id)
        return _prior(state, held) if held is not None else ()

    return ConductorView(
        operation_id=operation.operation_id,
        started=started,
        cancel=operation.cancel,
        jobs=operation.jobs,
        spaces=state.spaces,
        rejected=state.rejected,
        submitted=state.submitted,
        child=child,
        prior=prior,
        now=now,
        space_wait_s=engine.timing.space_wait_s,
        max_message_bytes=engine.max_message_bytes,
    )


def _prior(state: ExplorerState, operation: OperationState) -> tuple[PairResult, ...]:
    """The store's results an operation may have warm-started from (none before it started)."""
    started = operation.started
    space = state.spaces.get(started.space_id) if started else None
    if started is None or not isinstance(space, KnownSpace):
        return ()
    return state.store.results_for(space, operation.operation_id, started.occurred_at)


def _absorb(
    state: ExplorerState, operation: OperationState, event: Conducted, now: datetime
) -> None:
    """Fold a conductor's decision where it belongs: its own operation, or the child's."""
    if isinstance(event, SpaceSubmitted):
        state.submitted.setdefault(event.submission_id, now)
        return
    target = state.operation(event.operation_id)
    evolve(target, event)
    if isinstance(event, OperationRequested):
        _adopt(state, target, now)


def forget(state: ExplorerState, operation: OperationState) -> None:
    """Drop the details of a finished operation. A child keeps its results unless its parent
    ended (its parent may not be folded yet: nothing orders two partitions); a finished
    parent's children drop theirs."""
    parent = state.operations.get(operation.parent_id or "")
    ended = parent is not None and parent.finished is not None
    operation.forget_details(keep_results=operation.parent_id is not None and not ended)
    state.store.forget(operation.operation_id)
    for child in state.children.pop(operation.operation_id, ()):
        state.store.forget(child)  # the views its parent read of what it warm-started from
        held = state.operations.get(child)
        if held is not None and held.finished is not None:
            held.drop_results()
