"""What a `zeus_bso` job learns from recurrences of its workload on another GPU.

Epochs to reach the target depend on the workload and the batch size, not on the GPU (Zeus's own
simulator runs one training trace on every GPU's power trace for that reason). So when the
sample store already holds runs of the same workload measured elsewhere (another `gpu_model`,
or any property named in `shared_across`), a new job starts from them:

- transferred: the epochs each run needed (`target_epoch`, the epochs it trained) by batch
  size, and which batch sizes converged there. The pruning walk is skipped: the bandit starts
  at once over the batch sizes that converged there (and those above the largest size tried
  there, when that one converged: a GPU with less memory may not fit them); a batch size that
  never converged there, or that its pruning never reached, is left out;
- not transferred: time and power per epoch. A batch size's epoch cost on this GPU is measured
  by its own runs here (cost / epochs); its runs elsewhere then count as pseudo-observations
  `-epoch_cost * epochs` of its reward (the prior over its epochs to target). Before a batch
  size has run here, its epoch cost is only guessed, to decide whether it is worth a run: its
  epoch cost elsewhere times the median ratio (here / elsewhere) of the batch sizes run on both;
  once it runs, its own measurement replaces the guess. A first run profiles the power limits
  (its first epoch is dearer), so until a run without profiling measures the epoch cost, the
  runs there count as one observation at their mean epochs: the bandit comes back to it;
- the first run is the batch size cheapest elsewhere (epochs elsewhere times epoch cost there,
  at this job's eta and max power). A batch size never run elsewhere is explored as in a cold
  job (`num_explorations` runs first).

A run elsewhere without `target_epoch` tells nothing here and is skipped; with no batch size
converged elsewhere, the job runs cold (pruning first).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ElsewhereRun:
    """One run of the same workload on another GPU, as far as it transfers."""

    batch_size: int
    epochs: float
    """Epochs it trained (to the target when it converged)."""
    converged: bool
    cost: float = 0.0
    """Its cost there, at this job's eta and max power (to guess, never to observe)."""


@dataclass(frozen=True)
class Elsewhere:
    """Runs of the same workload elsewhere, by batch size."""

    epochs: Mapping[int, tuple[float, ...]]
    """Epochs to the target of every converged run, by batch size, oldest first (a run that
    did not converge, stopped early or at `max_epochs`, says only that it was tried)."""
    converged: frozenset[int]
    """Batch sizes with at least one converged run."""
    tried: frozenset[int] = frozenset()
    """Batch sizes with at least one run that started."""
    epoch_costs: Mapping[int, float] = field(default_factory=dict)
    """Least cost of one epoch there, by batch size (a guide, never an observation)."""

    @property
    def usable(self) -> bool:
        """True when a batch size converged elsewhere: the job starts warm."""
        return bool(self.converged)

    def arms(self, batch_sizes: Sequence[int]) -> tuple[int, ...]:
        """The job's batch sizes that converged there, and those it could not have run: a
        size between two sizes tried there (a pruning walk is contiguous, so that GPU's job
        had no such size), or beyond the smallest or largest size tried there when that one
        converged (the walk would have gone on). A size that failed there, or lies beyond a
        failure there, is left out."""
        if not self.tried:
            return ()
        low, high = min(self.tried), max(self.tried)

        def unknown_there(b: int) -> bool:
            if b in self.tried:
                return False
            return (
                low < b < high
                or (b < low and low in self.converged)
                or (b > high and high in self.converged)
            )

        return tuple(b for b in batch_sizes if b in self.converged or unknown_there(b))

    def pseudo_rewards(self, batch_size: int, epoch_cost: float | None) -> tuple[float, ...]:
        """Rewards of the runs elsewhere at this GPU's epoch cost (none when it is unknown)."""
        if epoch_cost is None:
            return ()
        return tuple(-epoch_cost * e for e in self.epochs.get(batch_size, ()))

    def guessed_reward(self, batch_size: int, epoch_cost: float | None) -> tuple[float, ...]:
        """One pseudo-reward, at the mean epochs there: worth a single observation, while the
        epoch cost here is only roughly known."""
        epochs = self.epochs.get(batch_size, ())
        if epoch_cost is None or not epochs:
            return ()
        return (-epoch_cost * statistics.fmean(epochs),)

    def first(self, batch_sizes: Sequence[int]) -> int | None:
        """The batch size of least expected cost there (None without epoch costs)."""
        known = [b for b in self.arms(batch_sizes) if b in self.epoch_costs and b in self.converged]
        if not known:
            return None
        return min(known, key=lambda b: self.epoch_costs[b] * statistics.fmean(self.epochs[b]))

    def guessed_epoch_costs(self, measured: Mapping[int, float]) -> dict[int, float]:
        """This GPU's epoch cost by batch size: measured where it ran, else guessed from there
        (see the module); {} before a batch size known there has run here."""
        ratios = [measured[b] / self.epoch_costs[b] for b in measured if b in self.epoch_costs]
        if not ratios:
            return dict(measured)
        scale = statistics.median(ratios)
        guessed = {b: scale * cost for b, cost in self.epoch_costs.items()}
        return {**guessed, **measured}


def elsewhere_of(runs: Iterable[ElsewhereRun]) -> Elsewhere:
    """Fold runs elsewhere (oldest first); those that never started are left out."""
    epochs: dict[int, list[float]] = {}
    converged: set[int] = set()
    tried: set[int] = set()
    costs: dict[int, float] = {}
    for run in runs:
        if run.epochs <= 0:
            continue
        tried.add(run.batch_size)
        if run.converged:
            converged.add(run.batch_size)
            epochs.setdefault(run.batch_size, []).append(run.epochs)
        if run.cost > 0:
            per_epoch = run.cost / run.epochs
            costs[run.batch_size] = min(costs.get(run.batch_size, per_epoch), per_epoch)
    return Elsewhere(
        epochs={b: tuple(e) for b, e in sorted(epochs.items())},
        converged=frozenset(converged),
        tried=frozenset(tried),
        epoch_costs=costs,
    )


NOWHERE = Elsewhere({}, frozenset())
"""No run elsewhere: a cold job."""
