"""Best-so-far for an operation's objective, followed incrementally over its results.

Results are read in the order of the measurements topic, which is the same on every replay, so
the best entity (the first to reach the best value) and the run of results without improvement
are the same after a restart. What a result's value is, and which value is better, are the
rules of `discospace.core.results`, which the projector's progress view follows too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from discospace.core import (
    Objective,
    ObjectiveSource,
    blocked_objectives,
    objective_blocks,
    result_value,
)
from discospace.core.results import Blocks
from discospace.events.common import PropertyValues
from discospace.explorer.domain.pairs import PairResult


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
    source: ObjectiveSource
    patience: int | None = None
    """The stopping rule `no_improvement`, if the operation has one."""
    needs: Mapping[str, Sequence[ObjectiveSource]] = field(default_factory=dict)
    """What the space's dependent experiments read (`KnownSpace.needs`): a result that keeps
    the source experiment from running for its entity is a result without improvement."""
    read: int = 0
    best: Best | None = None
    without_improvement: int = 0
    """Results of the source experiment since the best last improved (invalid ones included,
    and results that kept it from running)."""
    plateaued: bool = False
    """Whether `patience` results in a row once failed to improve the best: latched, so the
    rule holds whether the results were read one by one (a live explorer, which decides after
    each) or together (a restarted one, which would otherwise see the counter reset by an
    improvement that landed after the plateau, and go on where the live one stopped)."""

    _blocks: Blocks = field(init=False, repr=False)
    _blocked: set[str] = field(init=False, repr=False, default_factory=set)
    """Entities whose source experiment a result kept from running (counted once)."""

    def __post_init__(self) -> None:
        self._blocks = objective_blocks(self.needs, (self.source.experiment_id,))

    def update(self, outcomes: Sequence[PairResult]) -> None:
        for outcome in outcomes[self.read :]:
            self._read(outcome)
        self.read = len(outcomes)

    def _read(self, outcome: PairResult) -> None:
        if outcome.experiment_id != self.source.experiment_id:
            if outcome.entity_id in self._blocked or not blocked_objectives(outcome, self._blocks):
                return
            self._blocked.add(outcome.entity_id)  # infeasible, as an invalid result would be
        value = result_value(outcome, self.source)
        if value is not None and self.objective.improves(value, self._best_value):
            self.best = Best(outcome.entity_id, outcome.entity_values, outcome.values, value)
            self.without_improvement = 0
        else:
            self.without_improvement += 1
        if self.patience is not None and self.without_improvement >= self.patience:
            self.plateaued = True

    @property
    def _best_value(self) -> float | None:
        return None if self.best is None else self.best.value

    def reached(self, target: float) -> bool:
        """Whether the best value is at least as good as `target`."""
        return self.objective.reached(self._best_value, target)
