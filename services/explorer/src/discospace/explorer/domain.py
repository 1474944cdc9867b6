"""The explorer's state, pure: every operation's history, folded from its events.

State is a fold of events: the operations topic (requests, the explorer's own decisions, the
sampler's answers) and the measurements topic, in the order of each operation's partition.
`explore` folds one event and returns the decisions it leads to. Operators (random walk, grid,
optimizers) decide from the history; they arrive with the discovery loop, so for now no event
leads to a decision.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeAlias

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
    SamplesDrawn,
    SamplesRequested,
)
from discospace.events.common import OperationEvent

OperationInput: TypeAlias = (
    OperationRequested
    | OperationCancelRequested
    | OperationStarted
    | SamplesRequested
    | SamplesDrawn
    | OperationCompleted
    | OperationFailed
)
MeasurementInput: TypeAlias = (
    MeasurementStarted | MeasurementCompleted | MeasurementFailed | MeasurementReused
)
Decision: TypeAlias = OperationStarted | SamplesRequested | OperationCompleted | OperationFailed


@dataclass
class ExplorerState:
    """Every operation's events, in the order the explorer read them."""

    histories: dict[str, list[OperationEvent]] = field(default_factory=lambda: defaultdict(list))

    def history(self, operation_id: str) -> list[OperationEvent]:
        return list(self.histories.get(operation_id, ()))


def evolve(state: ExplorerState, event: OperationEvent) -> None:
    """Add `event` to its operation's history."""
    state.histories[event.operation_id].append(event)


def explore(state: ExplorerState, event: OperationEvent, now: datetime) -> list[Decision]:
    """Fold `event`, then decide what the operation does next (nothing until operators exist)."""
    evolve(state, event)
    return []
