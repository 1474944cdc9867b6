"""The Zeus batch-size optimizer as one pure function: attempts so far in, next run out.

Zeus (NSDI'23; ml-energy/zeus `PruningGTSBatchSizeOptimizer` with `JITPowerLimitOptimizer`,
driven as `Simulator.simulate_one_job` drives them in `zeus/simulate.py`) optimises a
recurring training job: each recurrence trains until the target metric, and the next
recurrence's batch size comes from what earlier ones cost,
`cost = eta * energy + (1 - eta) * max_power * time`.

- Pruning (`pruning.py`) explores batch sizes down then up from the default, for
  `num_pruning_rounds` rounds; then a Gaussian Thompson-sampling bandit (`bandit.py`) picks among
  the survivors. A run that does not converge is retried (a new attempt of the same recurrence).
- Early stopping: a run stops before the epoch that would take its cost past
  `beta * min_cost`, where `min_cost` is the least total cost of a recurrence so far (its failed
  attempts included); it then counts as not converged. A run that could not afford one epoch
  never started: the optimizer observes it with cost `100 * beta * min_cost`, and it adds
  nothing to the recurrence's cost (as in Zeus's simulator).
- Power limits: a batch size's first run profiles every limit and keeps the cheapest (the
  actuator does it, asked with the `profile_power` run control); later runs of that batch size
  use it.
- Concurrency: while the batch size being explored is in flight, another run gets the cheapest
  batch size known so far (nothing, when none has converged yet). Once the bandit runs, each
  free slot gets its own Thompson draw; runs in flight count as pulls for its exploration phase.

Every decision is a function of the attempts (in arrival order), what is in flight, and a
random generator the caller seeds from the operation's seed and the decision's number.

What it chose (`summary`): the recommendation (`recommendation`), what a run of it is expected
to cost, what every run cost, and each recurrence's cost with the phase it converged in
(pruning, or bandit once pruning was over), for the operation's end.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from discospace.core import DiscospaceError
from discospace.explorer.operators.zeus.bandit import (
    ROBUST_PSEUDO_COUNT,
    Bandit,
    Posterior,
    PosteriorKind,
    Prior,
)
from discospace.explorer.operators.zeus.pruning import (
    Explore,
    Observation,
    Pruned,
    pruning_state,
)
from discospace.explorer.operators.zeus.warm import NOWHERE, Elsewhere

MAX_TRIES = 20
"""Attempts of one recurrence before the target is declared unreachable (as Zeus's simulator)."""
NEVER_RAN_FACTOR = 100.0
"""A run that could not afford one epoch is observed with cost `100 * beta * min_cost`."""


@dataclass(frozen=True)
class ZeusSettings:
    """The optimizer's knobs (the Zeus paper's defaults)."""

    eta: float = 0.5
    beta: float = 2.0
    num_pruning_rounds: int = 2
    mab_num_explorations: int = 2
    window_size: int = 0
    prior_mean: float = 0.0
    prior_precision: float = 0.0
    posterior: PosteriorKind = "robust"
    """`robust` (pooled variance) or `zeus` (each arm's own, as Zeus: replays its decisions)."""
    pseudo_count: float = ROBUST_PSEUDO_COUNT

    def cost(self, energy_j: float, time_s: float, max_power: float) -> float:
        return self.eta * energy_j + (1.0 - self.eta) * max_power * time_s

    @property
    def bandit(self) -> Bandit:
        return Bandit(
            Prior(self.prior_mean, self.prior_precision),
            self.mab_num_explorations,
            self.window_size,
            self.posterior,
            self.pseudo_count,
        )


@dataclass(frozen=True)
class Job:
    """The recurring job: its batch sizes, default, power limits and `max_power`."""

    batch_sizes: tuple[int, ...]
    default_batch_size: int
    power_limits: tuple[int, ...]
    max_power: float
    """The price of time in the cost (W): the `max_power` option, else the highest power
    limit of the space."""
    elsewhere: Elsewhere = NOWHERE
    """Runs of the same workload on another GPU (`warm.py`): when usable, no pruning walk."""

    def allowed(self, limit: int) -> int:
        """`limit`, or the space's power limit nearest it (the higher of two as near): a
        profiling run chooses among every limit the GPU has, and its choice, outside a space
        that allows only some, was proposed for the next runs, which the space refused."""
        if limit in self.power_limits or not self.power_limits:
            return limit
        return min(self.power_limits, key=lambda allowed: (abs(allowed - limit), -allowed))


@dataclass(frozen=True)
class Attempt:
    """One finished run of the job (an attempt at one recurrence)."""

    batch_size: int
    power_limit: int
    """The limit it trained at (after profiling, the one profiling chose)."""
    time_s: float
    energy_j: float
    converged: bool
    profiled: bool = False
    """This run profiled the power limits during its first epoch."""
    epochs: float | None = None
    """Epochs it trained, the profiling epoch included, when the result says (`target_epoch`)."""

    @property
    def ran(self) -> bool:
        """False when early stopping left it not a single epoch: it never started."""
        return self.converged or self.time_s > 0.0 or self.energy_j > 0.0


@dataclass(frozen=True)
class Plan:
    """The next run: batch size, power limit (None: profile them) and early-stopping limit."""

    batch_size: int
    power_limit: int | None
    cost_limit: float | None
    """Stop the run before its cost passes this; None: only `max_epochs` stops it."""


@dataclass(frozen=True)
class History:
    """What the attempts so far tell the optimizer."""

    observations: tuple[Observation, ...]
    costs: tuple[float, ...]
    """Each attempt's cost (0 for one that never ran)."""
    min_cost: float
    """Least total cost of a recurrence so far (inf before the first converges)."""
    cheapest: int | None
    """Batch size of the cheapest converged run so far."""
    limits: dict[int, int]
    """The power limit profiling chose, by batch size."""
    recurrences: int
    """Recurrences done (converged runs)."""
    failed_in_a_row: int
    """Attempts since the last converged one (the current recurrence's failures)."""
    recurrence_costs: tuple[float, ...] = ()
    """Each recurrence's total cost (its failed attempts included), in order."""
    converged_at: tuple[int, ...] = ()
    """Each recurrence's converged attempt, as an index into `observations`."""
    epoch_costs: dict[int, float] = field(default_factory=dict)
    """Cost of one epoch by batch size, measured here (a run without profiling preferred)."""
    unprofiled: frozenset[int] = frozenset()
    """Batch sizes whose epoch cost a run without profiling measured."""


def read_history(attempts: Sequence[Attempt], settings: ZeusSettings, job: Job) -> History:
    """Fold the attempts, in arrival order, into what the optimizer decides with."""
    fold = HistoryFold(settings, job)
    for attempt in attempts:
        fold.read(attempt)
    return fold.history()


@dataclass
class HistoryFold:
    """`read_history`, one attempt at a time (for a caller that keeps it between decisions)."""

    settings: ZeusSettings
    job: Job
    observations: list[Observation] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    limits: dict[int, int] = field(default_factory=dict)
    min_cost: float = math.inf
    cheapest_run: float = math.inf
    cheapest: int | None = None
    running: float = 0.0
    """Cost of the current recurrence's attempts so far."""
    recurrences: int = 0
    failed: int = 0
    recurrence_costs: list[float] = field(default_factory=list)
    converged_at: list[int] = field(default_factory=list)
    epoch_costs: dict[int, float] = field(default_factory=dict)
    unprofiled: set[int] = field(default_factory=set)

    def read(self, attempt: Attempt) -> None:
        self.limits.setdefault(attempt.batch_size, self.job.allowed(attempt.power_limit))
        if not attempt.ran:
            observed = NEVER_RAN_FACTOR * self.settings.beta * self.min_cost
            self._observe(attempt, observed, 0.0)
            return
        cost = self.settings.cost(attempt.energy_j, attempt.time_s, self.job.max_power)
        if not abs(cost) <= MAX_COST:
            raise DiscospaceError(
                f"zeus_bso compares runs costing up to {MAX_COST:g} (J-equivalent); a run of "
                f"batch size {attempt.batch_size} cost {cost:.3g}: check its "
                "time_to_accuracy and energy_to_accuracy"
            )
        self._observe(attempt, cost, cost)
        self._epoch_cost(attempt, cost)
        self.running += cost
        if attempt.converged:
            self._converged(attempt.batch_size, cost)

    def history(self) -> History:
        """What the attempts read so far tell the optimizer."""
        return History(
            tuple(self.observations),
            tuple(self.costs),
            self.min_cost,
            self.cheapest,
            dict(self.limits),
            self.recurrences,
            self.failed,
            tuple(self.recurrence_costs),
            tuple(self.converged_at),
            dict(self.epoch_costs),
            frozenset(self.unprofiled),
        )

    def _epoch_cost(self, attempt: Attempt, cost: float) -> None:
        """Keep the batch size's epoch cost: the latest run's, a profiled one only until a run
        without profiling (whose epochs all ran at one limit) arrives."""
        if not attempt.epochs or attempt.epochs <= 0:
            return
        if attempt.profiled and attempt.batch_size in self.unprofiled:
            return
        self.epoch_costs[attempt.batch_size] = cost / attempt.epochs
        if not attempt.profiled:
            self.unprofiled.add(attempt.batch_size)

    def _observe(self, attempt: Attempt, observed: float, cost: float) -> None:
        self.observations.append(Observation(attempt.batch_size, observed, attempt.converged))
        self.costs.append(cost)
        self.failed = 0 if attempt.converged else self.failed + 1

    def _converged(self, batch_size: int, cost: float) -> None:
        if cost < self.cheapest_run:
            self.cheapest_run, self.cheapest = cost, batch_size
        self.min_cost = min(self.min_cost, self.running)
        self.recurrence_costs.append(self.running)
        self.converged_at.append(len(self.observations) - 1)
        self.running = 0.0
        self.recurrences += 1


MAX_COST = 1e150
"""The largest cost of a run the bandit compares: its squared deviations must be floats (beyond,
a decision raised `OverflowError`, which failed the operation without saying why)."""


def decision_rng(seed: int, decision: int) -> np.random.Generator:
    """The generator of the `decision`-th run's choice (0, 1, 2, ... runs requested before it):
    a function of (seed, decision) only, never of global state."""
    return np.random.default_rng([seed % 2**64, decision, 0])


def next_plan(
    settings: ZeusSettings,
    job: Job,
    history: History,
    in_flight: Sequence[int],
    rng: np.random.Generator,
) -> Plan | None:
    """The next run, or None when the next one must wait for a result in flight.

    `in_flight` holds the batch sizes of runs started and not finished. Raises
    `NoSurvivorError` when pruning leaves no batch size, and `DiscospaceError` when one
    recurrence failed `MAX_TRIES` times.
    """
    if history.failed_in_a_row >= MAX_TRIES:
        raise DiscospaceError(
            f"the job did not reach its target metric in {MAX_TRIES} attempts in a row"
        )
    batch_size = _next_batch_size(settings, job, history, in_flight, rng)
    if batch_size is None:
        return None
    limit = settings.beta * history.min_cost  # infinite: no cost yet, or one beyond any float
    return Plan(batch_size, history.limits.get(batch_size), limit if math.isfinite(limit) else None)


def _next_batch_size(
    settings: ZeusSettings,
    job: Job,
    history: History,
    in_flight: Sequence[int],
    rng: np.random.Generator,
) -> int | None:
    if job.elsewhere.usable:
        first = job.elsewhere.first(job.batch_sizes)
        if not history.observations and first is not None:
            return history.cheapest if first in in_flight else first
        rewards = _warm_rewards(job, history)
        pending = Counter(b for b in in_flight if b in rewards)
        return settings.bandit.choose(rewards, rng, pending)
    state = pruning_state(
        job.batch_sizes,
        job.default_batch_size,
        settings.num_pruning_rounds,
        history.observations,
    )
    if isinstance(state, Explore):
        return history.cheapest if state.batch_size in in_flight else state.batch_size
    rewards = {arm: _rewards(history, arm) for arm in state.survivors}
    pending = Counter(b for b in in_flight if b in rewards)
    return settings.bandit.choose(rewards, rng, pending)


def _warm_rewards(job: Job, history: History) -> dict[int, list[float]]:
    """A warm job's arms and their rewards: the runs elsewhere at this GPU's epoch cost
    (measured, or guessed before the arm ran here), then its own, the most recent last (a
    `window_size` keeps the last of the list: own first, it kept only the other GPU's). As in
    pruning, a batch size that failed here before it ever converged here is dropped (unless
    every one is)."""
    costs = job.elsewhere.guessed_epoch_costs(history.epoch_costs)
    arms = job.elsewhere.arms(job.batch_sizes)
    kept = [arm for arm in arms if not _failed_first(history, arm)] or list(arms)
    rewards = {
        arm: _prior_rewards(job, history, arm, costs) + _rewards(history, arm) for arm in kept
    }
    return {arm: [] if _worth_a_run(arm, rewards, history) else r for arm, r in rewards.items()}


WORTH_A_RUN = 1.25
"""A batch size not run here yet whose guessed cost is within this factor of the best arm's gets
one run (a guess across GPUs is off by some percent; chosen on seeds 1000-1029)."""


def _worth_a_run(arm: int, rewards: dict[int, list[float]], history: History) -> bool:
    """The arm has not run here and its guessed mean cost is near the best arm's. A run that
    converged here has run, whether or not its result said how many epochs it trained (read
    from its epoch cost alone, an arm whose runs report no `target_epoch` was "not run" at
    every decision, and the bandit pulled such arms at random for ever)."""
    ran = arm in history.epoch_costs or any(
        o.batch_size == arm and o.converged for o in history.observations
    )
    if ran or not rewards[arm]:
        return False
    means = [-sum(r) / len(r) for r in rewards.values() if r]
    return -sum(rewards[arm]) / len(rewards[arm]) <= WORTH_A_RUN * min(means)


def _prior_rewards(job: Job, history: History, arm: int, costs: dict[int, float]) -> list[float]:
    """The arm's runs elsewhere at its epoch cost here: all of them once a run without
    profiling measured it, one at their mean epochs while only a profiling run did (its first
    epoch, spread over every limit, makes it dearer), all of them while it is guessed."""
    if arm in history.epoch_costs and arm not in history.unprofiled:
        return list(job.elsewhere.guessed_reward(arm, history.epoch_costs[arm]))
    return list(job.elsewhere.pseudo_rewards(arm, costs.get(arm)))


def _failed_first(history: History, batch_size: int) -> bool:
    """The batch size's first run here did not converge."""
    mine = (o for o in history.observations if o.batch_size == batch_size)
    first = next(mine, None)
    return first is not None and not first.converged


def _arm_rewards(job: Job, history: History, arm: int) -> list[float]:
    """(A warm job) an arm's runs elsewhere at this GPU's measured epoch cost, then its own
    rewards, the most recent last (what a `window_size` keeps, as `_warm_rewards` has it)."""
    own = _rewards(history, arm)
    if not job.elsewhere.usable:
        return own
    return list(job.elsewhere.pseudo_rewards(arm, history.epoch_costs.get(arm))) + own


def arm_posteriors(
    settings: ZeusSettings, job: Job, history: History, arms: Sequence[int]
) -> dict[int, Posterior]:
    """The bandit's posterior of each of `arms`: from the rewards it chooses with (a warm job:
    its runs elsewhere counted as `_warm_rewards` counts them; the recommendation read them
    all at the measured epoch cost, and named another arm than the bandit's best)."""
    if not job.elsewhere.usable:
        return settings.bandit.posteriors({arm: _rewards(history, arm) for arm in arms})
    warm = _warm_rewards(job, history)
    return settings.bandit.posteriors(
        {arm: warm.get(arm) or _arm_rewards(job, history, arm) for arm in arms}
    )


def _rewards(history: History, batch_size: int) -> list[float]:
    return [-o.cost for o in history.observations if o.batch_size == batch_size]


@dataclass(frozen=True)
class Choice:
    """The configuration the optimizer would run now if it stopped exploring."""

    batch_size: int
    power_limit: int


def recommendation(settings: ZeusSettings, job: Job, history: History) -> Choice | None:
    """The optimizer's pick: the surviving batch size of best posterior mean reward once
    pruning is over (a warm job: among the arms run here), else the cheapest converged one;
    None before anything converged."""
    arms = _arms(settings, job, history)
    if arms:
        beliefs = arm_posteriors(settings, job, history, arms)
        best: int | None = max(arms, key=lambda b: beliefs[b].mean)
    else:
        best = history.cheapest
    if best is None or best not in history.limits:
        return None
    return Choice(best, history.limits[best])


PRUNING, BANDIT = "pruning", "bandit"


@dataclass(frozen=True)
class Summary:
    """What the optimizer chose by now, and what its runs cost (in the cost's unit)."""

    choice: Choice | None
    expected_cost: float | None
    """The bandit's posterior mean cost of a run of the chosen batch size; None without one."""
    cost_so_far: float
    """Every attempt's cost (a run that never started costs nothing)."""
    recurrence_costs: tuple[float, ...]
    recurrence_phases: tuple[str, ...]
    """`pruning` or `bandit`: the phase when each recurrence's converged run arrived."""


def summary(settings: ZeusSettings, job: Job, history: History) -> Summary:
    """The recommendation with its expected cost, the cost so far, and each recurrence's cost
    and phase."""
    choice = recommendation(settings, job, history)
    expected = None
    if choice is not None:
        arms = _arms(settings, job, history) or (choice.batch_size,)
        mean_cost = -arm_posteriors(settings, job, history, arms)[choice.batch_size].mean
        expected = mean_cost if math.isfinite(mean_cost) else None
    over = 0 if job.elsewhere.usable else pruning_over_at(settings, job, history.observations)
    phases = tuple(PRUNING if at < over else BANDIT for at in history.converged_at)
    cost = math.fsum(history.costs)
    return Summary(choice, expected, cost, history.recurrence_costs, phases)


def _arms(settings: ZeusSettings, job: Job, history: History) -> tuple[int, ...]:
    """The bandit's arms once pruning is over that converged here (a warm job: those run
    here); () before. Pruning leaves only sizes that converged, but without pruning rounds
    (`num_pruning_rounds: 0`) every size survives: one not run yet had the flat prior's mean
    (cost 0) and was chosen, as was one that never converged."""
    if job.elsewhere.usable:
        candidates = job.elsewhere.arms(job.batch_sizes)
    else:
        try:
            state = pruning_state(
                job.batch_sizes,
                job.default_batch_size,
                settings.num_pruning_rounds,
                history.observations,
            )
        except DiscospaceError:
            return ()
        candidates = state.survivors if isinstance(state, Pruned) else ()
    converged = {o.batch_size for o in history.observations if o.converged}
    return tuple(b for b in candidates if b in converged)


def pruning_over_at(settings: ZeusSettings, job: Job, observations: Sequence[Observation]) -> int:
    """How many observations pruning took (`len(observations) + 1` while it goes on, or when
    it found no survivor): once over, it stays over, so a bisection finds it."""

    def over(count: int) -> bool:
        try:
            state = pruning_state(
                job.batch_sizes,
                job.default_batch_size,
                settings.num_pruning_rounds,
                observations[:count],
            )
        except DiscospaceError:
            return False
        return isinstance(state, Pruned)

    return bisect.bisect_left(range(len(observations) + 1), True, key=over)
