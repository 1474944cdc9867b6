"""Decisions read from the log against what this explorer folded: the first in the log wins.

Explorer replicas decide only for the operations of their own partitions, but a replica that
lost its partitions without knowing it yet (stalled past the group's session timeout) can still
publish a late decision. Decision ids derive from the operation's history (`OperationStarted`
from the request; `SamplesRequested` from the start and its `request_index`; the end from the
start), so such a decision carries the id of the one it competes with, maybe with other content.
Every reader keeps the first in log order for each slot (the start, each request index; the
first end event ends the operation) and ignores the others. For this explorer, a decision read
from the log for a slot it already holds is:

- `KNOWN`: the same decision (a redelivery, or its own decision read back, now confirmed);
- `CONFLICT`: another decision after the one it folded from the log: ignored;
- `LOST`: another decision while its own for that slot was not read back yet: the log holds
  another replica's decision first, so what this explorer built on its own is wrong, and the
  operation must be rebuilt from the log (`rebuild`).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from discospace.events import OperationStarted, SamplesRequested
from discospace.events.common import OperationEvent
from discospace.explorer.domain.operation import Decision, OperationState, evolve
from discospace.explorer.domain.state import ExplorerState, forget


class Reading(Enum):
    NEW = "new"
    KNOWN = "known"
    CONFLICT = "conflict"
    LOST = "lost"


def read_decision(state: ExplorerState, event: Decision) -> Reading:
    """How a decision read from the log compares with what `state` holds for its slot.

    A decision found the same as this explorer's own is confirmed (no longer `unconfirmed`).
    """
    operation = state.operations.get(event.operation_id)
    if operation is None:
        return Reading.NEW
    if operation.finished is not None:
        return Reading.KNOWN
    held = _held(operation, event)
    if held is None:
        return Reading.NEW
    if _same(held, event):
        operation.unconfirmed.discard(held.event_id)
        return Reading.KNOWN
    if held.event_id in operation.unconfirmed:
        return Reading.LOST
    return Reading.CONFLICT


def rebuild(state: ExplorerState, operation_id: str, history: Iterable[OperationEvent]) -> None:
    """Replace what `state` holds of an operation by the fold of its `history` (its events as
    the log holds them, each topic in order); when it was noticed is kept."""
    before = state.operations.get(operation_id)
    fresh = OperationState(operation_id, noticed_at=before.noticed_at if before else None)
    for event in history:
        if event.operation_id == operation_id:
            evolve(fresh, event)
    state.operations[operation_id] = fresh
    state.store.forget(operation_id)
    if fresh.finished is not None:
        forget(state, fresh)


def _held(operation: OperationState, event: Decision) -> Decision | None:
    if isinstance(event, OperationStarted):
        return operation.started
    if isinstance(event, SamplesRequested):
        return operation.requests.get(event.request_index)
    return None


def _same(held: Decision, event: Decision) -> bool:
    """The same decision: a request asks for the same (whenever it was made); a start is the
    same start, its time included (the operation's clock and warm start begin there)."""
    if isinstance(held, SamplesRequested) and isinstance(event, SamplesRequested):
        return held.fingerprint() == event.fingerprint()
    return held.model_dump(mode="json") == event.model_dump(mode="json")
