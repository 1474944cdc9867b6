"""Zeus's pruning stage: walk the batch sizes down, then up, from a default; keep what converged.

Follows `PruningExploreManager` of the Zeus project (ml-energy/zeus, `zeus/policy/optimizer.py`,
NSDI'23 section 4.3). Each of `rounds` rounds walks *down* from the round's default (the default
first, then smaller sizes, descending), then *up* (larger sizes, ascending). A batch size that
did not converge ends the walk in that direction. The cheapest converged size of a round becomes
the next round's default, and only converged sizes take part in the next round. The sizes that
survive the last round are the bandit's arms.

The walk is a fold over observations in arrival order, so the same history always gives the
same next batch size. An observation of a batch size other than the one the walk expects (a
concurrent recurrence run with the cheapest known size) does not move the walk, as in Zeus's
`PruningGTSBatchSizeOptimizer.observe` with concurrency on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from discospace.core import DiscospaceError


class NoSurvivorError(DiscospaceError):
    """A pruning round ended with no batch size that reached the target metric."""


@dataclass(frozen=True)
class Observation:
    """One recurrence attempt as the batch-size optimizer sees it."""

    batch_size: int
    cost: float
    converged: bool


@dataclass(frozen=True)
class Explore:
    """The walk waits for a result of `batch_size` (in pruning round `round`, from 0)."""

    batch_size: int
    round: int


@dataclass(frozen=True)
class Pruned:
    """Pruning is over: `survivors` converged in the last round; `default` was its cheapest."""

    survivors: tuple[int, ...]
    default: int


PruningState: TypeAlias = Explore | Pruned


@dataclass
class _Round:
    """One pruning round in progress."""

    number: int
    candidates: tuple[int, ...]
    default: int
    directions: list[list[int]] = field(default_factory=list)
    converged: list[int] = field(default_factory=list)
    best_cost: float = math.inf
    tried: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        at = self.candidates.index(self.default)
        down = sorted(self.candidates[: at + 1], reverse=True)
        up = sorted(self.candidates[at + 1 :])
        self.directions = [d for d in (down, up) if d]

    @property
    def over(self) -> bool:
        return not self.directions

    @property
    def expected(self) -> int:
        return self.directions[0][0]

    def observe(self, observation: Observation) -> None:
        """Record the expected batch size's result and move the walk on."""
        self.tried.append(observation.batch_size)
        if not observation.converged:
            self.directions.pop(0)
            return
        self.converged.append(observation.batch_size)
        if observation.cost < self.best_cost:
            self.best_cost, self.default = observation.cost, observation.batch_size
        self.directions[0].pop(0)
        if not self.directions[0]:
            self.directions.pop(0)


def pruning_state(
    batch_sizes: Iterable[int],
    default: int,
    rounds: int,
    observations: Sequence[Observation],
) -> PruningState:
    """Where the pruning walk stands after `observations` (in arrival order).

    Raises `NoSurvivorError` when a round ends with no converged batch size, and
    `DiscospaceError` when `default` is not one of `batch_sizes`.
    """
    candidates = tuple(sorted(set(batch_sizes)))
    if default not in candidates:
        sizes = ", ".join(str(b) for b in candidates)
        raise DiscospaceError(f"the default batch size {default} is not one of {sizes}")
    if rounds <= 0:
        return Pruned(candidates, default)
    current = _Round(0, candidates, default)
    for observation in observations:
        if observation.batch_size == current.expected:
            current.observe(observation)
        if current.over:
            current = _next_round(current)
            if current.number >= rounds:
                return Pruned(current.candidates, current.default)
    return Explore(current.expected, current.number)


def _next_round(finished: _Round) -> _Round:
    if not finished.converged:
        tried = ", ".join(str(b) for b in finished.tried)
        raise NoSurvivorError(
            f"no batch size reached the target metric in pruning round {finished.number + 1} "
            f"(tried {tried}): raise max_epochs or check the job's target"
        )
    return _Round(finished.number + 1, tuple(sorted(finished.converged)), finished.default)
