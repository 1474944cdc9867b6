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

That is the `zeus` posterior (`posterior: zeus`, kept to replay Zeus decision for decision). The
default, `robust`, learns the reward variance from every arm at once (`robust_posteriors`): the
noise of training to a target (how many epochs a run needs) is shared by all batch sizes of a
job, so its relative size, the pooled squared coefficient of variation

    pooled_cv2 = sum over arms of (sum of (r_i - mean)^2) / mean^2  /  sum over arms of (n - 1)

is a prior guess of every arm's variance, `pooled_cv2 * mean^2`, worth `pseudo_count`
observations (a Normal-Gamma style shrinkage of the arm's own sum of squares):

    variance = (pseudo_count * pooled_cv2 * mean^2 + sum of (r_i - mean)^2) / (pseudo_count + n)

Two nearly equal rewards no longer pin an arm: its variance stays near the job's. With one
reward the arm's mean is uncertain too (Zeus: exact). The posterior means are Zeus's (the
rewards' mean under a flat prior), so the recommendation reads the same data the same way.

Arms with fewer than `num_explorations` observations are pulled first, in a seeded random order;
then every arm's mean is sampled from its posterior and the largest sample wins. Randomness
comes from the generator the caller passes (seeded from the operation's seed and the decision
number), never from global state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

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
    return _updated(prior, rewards, lambda average, squares: squares / len(rewards))


def _updated(
    prior: Prior, rewards: Sequence[float], variance: Callable[[float, float], float]
) -> Posterior:
    """`prior` updated with `rewards` whose variance is `variance(average, sum of squared
    deviations)`: Zeus's own estimate, or the robust one shrunk towards the pooled noise."""
    if not rewards:
        return Posterior(prior.mean, prior.precision, 0)
    if not all(math.isfinite(r) for r in rewards):
        return Posterior(-math.inf, math.inf, len(rewards))
    count, total = len(rewards), math.fsum(rewards)
    average = total / count
    spread = variance(average, math.fsum((r - average) ** 2 for r in rewards))
    reward_precision = 1.0 / spread if spread > 0.0 else math.inf
    if math.isinf(reward_precision):  # no spread, or one too small for a float's inverse
        return Posterior(average, math.inf, count)
    precision = prior.precision + count * reward_precision
    mean = (prior.precision * prior.mean + reward_precision * total) / precision
    return Posterior(mean, precision, count)


PosteriorKind = Literal["robust", "zeus"]
ROBUST_PSEUDO_COUNT = 2.0
"""Observations the pooled variance is worth in an arm's variance (chosen among 1, 2 and 4 on
seeds 1000-1099 of the V100 and A40 traces: all three removed the pinned-arm failures; 2 had the
lowest 95th percentile of cumulative cost on A40 movielens, within 0.3% of the others elsewhere)."""


def pooled_cv2(rewards: Mapping[int, Sequence[float]]) -> float:
    """The squared coefficient of variation of a reward, pooled over the arms with two or more
    finite rewards (0 when none has)."""
    spread, degrees = 0.0, 0
    for arm_rewards in rewards.values():
        finite = [r for r in arm_rewards if math.isfinite(r)]
        if len(finite) < 2 or len(finite) < len(arm_rewards):
            continue
        average = math.fsum(finite) / len(finite)
        if average == 0.0:
            continue
        if abs(average) < 1e150:
            spread += math.fsum((r - average) ** 2 for r in finite) / average**2
        else:  # the same, without squaring a number whose square is no float
            spread += math.fsum(((r - average) / average) ** 2 for r in finite)
        degrees += len(finite) - 1
    return spread / degrees if degrees else 0.0


def robust_posterior(
    rewards: Sequence[float], cv2: float, pseudo_count: float, prior: Prior = Prior()
) -> Posterior:
    """An arm's posterior with its variance shrunk towards `cv2 * mean^2` (see the module)."""
    count = len(rewards)
    return _updated(
        prior,
        rewards,
        lambda average, squares: (
            (pseudo_count * cv2 * average**2 + squares) / (pseudo_count + count)
        ),
    )


@dataclass(frozen=True)
class Bandit:
    """The bandit's settings."""

    prior: Prior = Prior()
    num_explorations: int = 2
    window_size: int = 0
    kind: PosteriorKind = "robust"
    pseudo_count: float = ROBUST_PSEUDO_COUNT

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
        beliefs = self.posteriors(rewards)
        samples = {arm: beliefs[arm].sample(rng) for arm in arms}
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

    def posteriors(self, rewards: Mapping[int, Sequence[float]]) -> dict[int, Posterior]:
        """Every arm's posterior from its windowed rewards (the robust one pools the arms)."""
        kept = {arm: windowed(r, self.window_size) for arm, r in rewards.items()}
        if self.kind == "zeus":
            return {arm: posterior(r, self.prior) for arm, r in kept.items()}
        cv2 = pooled_cv2(kept)
        return {
            arm: robust_posterior(r, cv2, self.pseudo_count, self.prior) for arm, r in kept.items()
        }
