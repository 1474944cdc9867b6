"""Gaussian Thompson sampling over batch sizes, with a learned reward precision.

Follows Zeus's `GaussianTS` (ml-energy/zeus, `zeus/policy/mab.py`) as its pruning optimizer
uses it (`PruningGTSBatchSizeOptimizer`, `zeus/policy/optimizer.py`): each arm's reward
(`-cost`) is Gaussian with a known precision, the precision is learned as 1 / variance of the
arm's (windowed) rewards, and the mean has a Gaussian conjugate prior N(prior_mean,
1 / prior_precision) (precision 0: flat). With n rewards r_i and reward precision tau:

    posterior precision = prior_precision + n * tau
    posterior mean      = (prior_precision * prior_mean + tau * sum(r_i)) / posterior precision

A zero variance (one reward, or identical ones) gives an infinite precision: the posterior is
the rewards' mean, exactly. Two nearly equal rewards likewise give a posterior as narrow as their
spread, whatever the arm's true spread: Thompson sampling then hardly ever revisits that arm if
another looks better. Zeus behaves the same (on a trace with a few training runs per batch size,
two draws of the same run happen often); `tests/test_zeus_reference.py` shows a whole job.

Arms with fewer than `num_explorations` observations are pulled first, in a seeded random order;
then every arm's mean is sampled from its posterior and the largest sample wins. Randomness
comes from the generator the caller passes (seeded from the operation's seed and the decision
number), never from global state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from discospace.core import DiscospaceError


@dataclass(frozen=True)
class Prior:
    """Belief about an arm's mean reward before any observation."""

    mean: float = 0.0
    precision: float = 0.0
    """0: a flat prior (the posterior is the data's alone)."""


@dataclass(frozen=True)
class Posterior:
    """Belief about an arm's mean reward after its observations."""

    mean: float
    precision: float
    observations: int

    def sample(self, rng: np.random.Generator) -> float:
        """One draw of the arm's mean reward (+inf for an arm nothing is known about, so it
        is tried)."""
        if math.isinf(self.precision):
            return self.mean
        if self.precision <= 0.0:
            return math.inf
        return float(rng.normal(self.mean, math.sqrt(1.0 / self.precision)))


def windowed(rewards: Sequence[float], window_size: int) -> tuple[float, ...]:
    """The `window_size` most recent rewards (all of them when `window_size` is 0)."""
    if window_size < 0:
        raise DiscospaceError(f"window_size must be 0 (no window) or positive, not {window_size}")
    return tuple(rewards[-window_size:] if window_size else rewards)


def posterior(rewards: Sequence[float], prior: Prior = Prior()) -> Posterior:
    """The conjugate update of `prior` with `rewards`, their precision learned from them.

    A reward of -inf (a run that could not run before any cost was known) rules the arm out."""
    if not rewards:
        return Posterior(prior.mean, prior.precision, 0)
    if not all(math.isfinite(r) for r in rewards):
        return Posterior(-math.inf, math.inf, len(rewards))
    count, total = len(rewards), math.fsum(rewards)
    average = total / count
    variance = math.fsum((r - average) ** 2 for r in rewards) / count
    if variance == 0.0:
        return Posterior(average, math.inf, count)
    reward_precision = 1.0 / variance
    precision = prior.precision + count * reward_precision
    mean = (prior.precision * prior.mean + reward_precision * total) / precision
    return Posterior(mean, precision, count)


@dataclass(frozen=True)
class Bandit:
    """The bandit's settings."""

    prior: Prior = Prior()
    num_explorations: int = 2
    window_size: int = 0

    def choose(
        self,
        rewards: Mapping[int, Sequence[float]],
        rng: np.random.Generator,
        pending: Mapping[int, int] | None = None,
    ) -> int:
        """The arm to pull next, given each arm's rewards in arrival order.

        `pending` counts pulls in flight per arm: they count as observations for the
        exploration phase, so concurrent pulls do not all explore the same arm.
        """
        if not rewards:
            raise DiscospaceError("the bandit has no arm to choose from")
        arms = sorted(rewards)
        cold = self.cold_arm(rewards, rng, pending or {})
        if cold is not None:
            return cold
        samples = {arm: self.posterior(rewards[arm]).sample(rng) for arm in arms}
        return max(arms, key=lambda arm: samples[arm])

    def cold_arm(
        self,
        rewards: Mapping[int, Sequence[float]],
        rng: np.random.Generator,
        pending: Mapping[int, int],
    ) -> int | None:
        """An arm still in its exploration phase, picked in a seeded random order; or None."""
        arms = sorted(rewards)
        for index in rng.permutation(len(arms)):
            arm = arms[int(index)]
            if len(rewards[arm]) + pending.get(arm, 0) < self.num_explorations:
                return arm
        return None

    def posterior(self, rewards: Sequence[float]) -> Posterior:
        """An arm's posterior from its windowed rewards."""
        return posterior(windowed(rewards, self.window_size), self.prior)
