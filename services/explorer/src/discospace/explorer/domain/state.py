"""The explorer's whole state: registered spaces and every operation, and how events move it.

`explore(state, event, engine, now)` folds one event and, once the explorer is live, returns
the decisions it leads to for an operation it owns. While reading the topics at start the
explorer only folds (`state.live` is False): deciding on a partial history could repeat a
decision that is further down the log. `go_live` then decides for every operation it owns at
once, from the complete history.

Every explorer replica folds every operation (its partitions may change, and optimizers warm
start from every result), but decides only for those `state.owns` names: the operations of its
partitions (`service/ownership.py`). One explorer alone owns every operation, the default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from discospace.events import MeasurementCompleted, SpaceRegistered
from discospace.events.common import OperationEvent
from discospace.explorer.domain.decide import Decided, Engine, decide
from discospace.explorer.domain.operation import OperationState, evolve
from discospace.explorer.domain.sample_store import SampleStores
from discospace.explorer.domain.spaces import SpaceEntry, known_space


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

    def operation(self, operation_id: str) -> OperationState:
        return self.operations.setdefault(operation_id, OperationState(operation_id))

    def has_folded(self, event: OperationEvent | SpaceRegistered) -> bool:
        """Whether `event` would change nothing: already folded, or its operation is over."""
        if isinstance(event, SpaceRegistered):
            return event.space_id in self.spaces
        if isinstance(event, MeasurementCompleted) and not self.store.knows(event):
            return False
        operation = self.operations.get(event.operation_id)
        return operation is not None and (
            operation.finished is not None or event.event_id in operation.seen
        )

    def active(self) -> list[OperationState]:
        """Operations requested and not finished, in the order they became known."""
        return [op for op in self.operations.values() if op.requested and not op.finished]

    def owned(self) -> list[OperationState]:
        """The active operations this explorer decides for."""
        return [op for op in self.active() if self.owns(op.operation_id)]


def explore(
    state: ExplorerState,
    event: OperationEvent | SpaceRegistered,
    engine: Engine,
    now: datetime,
) -> Decided:
    """Fold `event`; once live, the decisions it leads to (already folded into `state`)."""
    if isinstance(event, SpaceRegistered):
        return _on_space(state, event, engine, now)
    if isinstance(event, MeasurementCompleted):
        state.store.record(event)
    operation = state.operation(event.operation_id)
    if operation.finished is not None or not evolve(operation, event):
        return Decided()
    if operation.requested is not None and operation.noticed_at is None:
        operation.noticed_at = now
    if operation.finished is not None:
        forget(state, operation)
    if not state.live or not state.owns(operation.operation_id):
        return Decided()
    return _decide(state, operation, engine, now)


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


def _on_space(
    state: ExplorerState, event: SpaceRegistered, engine: Engine, now: datetime
) -> Decided:
    if event.space_id in state.spaces:
        return Decided()
    state.spaces[event.space_id] = known_space(event)
    decided = Decided()
    if state.live:
        for operation in state.owned():
            if operation.waits_for(event.space_id):
                decided.merge(_decide(state, operation, engine, now))
    return decided


def _decide(
    state: ExplorerState, operation: OperationState, engine: Engine, now: datetime
) -> Decided:
    decided = decide(operation, state.spaces, engine, now, state.store)
    if operation.finished is not None:
        forget(state, operation)
    return decided


def forget(state: ExplorerState, operation: OperationState) -> None:
    """Drop the details of a finished operation."""
    operation.forget_details()
    state.store.forget(operation.operation_id)
