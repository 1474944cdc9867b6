"""Just-in-time power-limit profiling: the first recurrence of a batch size picks its limit.

As in Zeus (NSDI'23 section 4.4; ml-energy/zeus `JITPowerLimitOptimizer` in
`zeus/policy/optimizer.py` and `Simulator._profile_power_limit` in `zeus/simulate.py`): the
first epoch of a batch size's first recurrence is split evenly across the GPU's power limits,
each slice measuring seconds per epoch and mean watts; the limit with the least cost per epoch

    epoch_cost(p) = (eta * average_power(p) + (1 - eta) * max_power) * time_per_epoch(p)

(the paper's equation 7) is kept for the rest of that run and every later one of that batch
size. Limits are profiled from the highest down and a lower one replaces the best only when it
is strictly cheaper, so ties keep the higher limit, as Zeus does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from discospace.core import DiscospaceError


@dataclass(frozen=True)
class LimitProfile:
    """What one power limit measured during the profiling epoch."""

    power_limit: int
    time_per_epoch: float
    """Seconds per epoch at this limit."""
    average_power: float
    """Mean watts at this limit."""

    def epoch_cost(self, eta: float, max_power: float) -> float:
        """The Zeus cost of one epoch at this limit."""
        return (eta * self.average_power + (1.0 - eta) * max_power) * self.time_per_epoch

    @property
    def epoch_energy(self) -> float:
        return self.time_per_epoch * self.average_power


def cheapest_limit(profiles: Sequence[LimitProfile], eta: float, max_power: float) -> int:
    """The power limit of least cost per epoch (ties: the higher limit)."""
    if not profiles:
        raise DiscospaceError("power-limit profiling needs at least one power limit")
    best = None
    for profile in sorted(profiles, key=lambda p: p.power_limit, reverse=True):
        if best is None or profile.epoch_cost(eta, max_power) < best.epoch_cost(eta, max_power):
            best = profile
    assert best is not None
    return best.power_limit


@dataclass(frozen=True)
class ProfilingEpoch:
    """Time and energy of the epoch that profiles every limit (an equal slice each)."""

    time_s: float
    energy_j: float


def profiling_epoch(profiles: Sequence[LimitProfile]) -> ProfilingEpoch:
    """The profiling epoch's cost: the mean over limits of one epoch's time and energy."""
    if not profiles:
        raise DiscospaceError("power-limit profiling needs at least one power limit")
    count = len(profiles)
    return ProfilingEpoch(
        time_s=sum(p.time_per_epoch for p in profiles) / count,
        energy_j=sum(p.epoch_energy for p in profiles) / count,
    )


def epochs_within(cost_limit: float | None, epoch_cost: float, max_epochs: int) -> int:
    """Whole epochs a run may train before its cost would pass `cost_limit` (Zeus's early
    stopping: the run stops right before the epoch that would cross it), at most `max_epochs`.
    None: no limit. 0 means the run cannot afford a single epoch and does not start."""
    if cost_limit is None:
        return max_epochs
    if epoch_cost <= 0.0:
        raise DiscospaceError(f"the cost of an epoch must be positive, not {epoch_cost}")
    return int(min(cost_limit // epoch_cost, max_epochs))
