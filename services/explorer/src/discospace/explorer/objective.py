"""Best-so-far for an operation's objective, followed incrementally over its results.

Results are read in the order of the measurements topic, which is the same on every replay, so
the best entity (the first to reach the best value) and the run of results without improvement
are the same after a restart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from discospace.events import Objective
from discospace.events.common import PropertyValues
from discospace.explorer.pairs import Outcome


@dataclass(frozen=True)
class Best:
    """The entity with the best objective value so far."""

    entity_id: str
    entity_values: PropertyValues
    values: PropertyValues
    value: float


@dataclass
class ObjectiveTracker:
    """Follows one objective over an operation's results, reading each result once.

    `source` is the (experiment id, target) whose values hold the objective.
    """

    objective: Objective
    source: tuple[str, str]
    read: int = 0
    best: Best | None = None
    without_improvement: int = 0
    """Results of the source experiment since the best last improved (invalid ones included)."""

    def update(self, outcomes: Sequence[Outcome]) -> None:
        for outcome in outcomes[self.read :]:
            self._read(outcome)
        self.read = len(outcomes)

    def _read(self, outcome: Outcome) -> None:
        if outcome.experiment_id != self.source[0]:
            return
        value = self._value(outcome)
        if value is not None and self._improves(value):
            self.best = Best(outcome.entity_id, outcome.entity_values, outcome.values, value)
            self.without_improvement = 0
        else:
            self.without_improvement += 1

    def _value(self, outcome: Outcome) -> float | None:
        raw = outcome.values.get(self.source[1]) if outcome.is_valid else None
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            return None
        return float(raw)

    def _improves(self, value: float) -> bool:
        return self.best is None or self.better(value, self.best.value)

    def better(self, value: float, than: float) -> bool:
        return value > than if self.objective.direction == "max" else value < than

    def reached(self, target: float) -> bool:
        """Whether the best value is at least as good as `target`."""
        return self.best is not None and not self.better(target, self.best.value)
