"""Zeus's run controls as pure rules: what one run costs when an optimizer stops it early or has
it profile the GPU's power limits.

The optimizer benchmark's in-process simulator (`discospace.bench.zeus_sim`) and the replay
actuator's `train_to_target` both cost a run with these rules, so a job optimised in process and
one optimised through the services see the same runs.

- Epoch cost (the Zeus paper's equation 7): at power limit `p`,
  `epoch_cost(p) = (eta * average_power(p) + (1 - eta) * max_power) * time_per_epoch(p)`.
- Just-in-time power profiling (NSDI'23 section 4.4; ml-energy/zeus `JITPowerLimitOptimizer`
  and `Simulator._profile_power_limit`): the run's first epoch is split evenly across the power
  limits (those the trace holds at the run's batch size), so it costs the mean of their
  epochs; the limit of least epoch cost is kept for the rest of the run. Limits are compared
  from the highest down and a lower one wins only when strictly cheaper, so ties keep the
  higher limit, as Zeus does.
- Early stopping: a run stops right before the epoch that would take its cost past its cost
  limit, at most `max_epochs` epochs (`epochs = min(cost_limit // epoch_cost, max_epochs)`, the
  epoch cost at the limit it trains at); a run that cannot afford one epoch never starts and
  costs nothing. A stopped run did not converge.
- A simulated run (`simulated_run`, Zeus's `Simulator` in `zeus/simulate.py`): a run planned as
  the Zeus optimizer plans one (batch size, power limit or none to profile them from the
  highest, cost limit) replayed on one training run of the train trace.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from discospace.traces.zeus import ZeusTrace, ZeusTraceError


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
        raise ZeusTraceError("Power-limit profiling needs at least one power limit.")
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
        raise ZeusTraceError("Power-limit profiling needs at least one power limit.")
    count = len(profiles)
    return ProfilingEpoch(
        time_s=sum(p.time_per_epoch for p in profiles) / count,
        energy_j=sum(p.epoch_energy for p in profiles) / count,
    )


def epochs_within(cost_limit: float | None, epoch_cost: float, max_epochs: int) -> int:
    """Whole epochs a run may train before its cost would pass `cost_limit` (Zeus's early
    stopping: the run stops right before the epoch that would cross it), at most `max_epochs`.
    None: no limit. 0 means the run cannot afford a single epoch and does not start.

    As Zeus's simulator computes it (zeus-ml 0.4.0, `simulate.py`: `cost_ub // cost_per_epoch`
    at the chosen limit), so that the replay makes Zeus's decisions, with its two quirks: a
    limit equal to a run's reported cost may allow one epoch fewer (the floor of a quotient one
    ulp below a whole number), and a profiling run's first epoch, dearer than the chosen
    limit's, is not counted against the limit (its run may end a little above it)."""
    if cost_limit is None:
        return max_epochs
    if epoch_cost <= 0.0:
        raise ZeusTraceError(f"The cost of an epoch must be positive, not {epoch_cost}.")
    return int(min(cost_limit // epoch_cost, max_epochs))


@dataclass(frozen=True)
class RunControls:
    """How an optimizer asks for one run: its early-stopping limit, whether it profiles the
    power limits, and its epoch cap."""

    cost_limit: float | None = None
    """Stop before the epoch that would pass this cost; None: no limit."""
    profile_power: bool = False
    """Profile every power limit in the first epoch and train the rest at the cheapest."""
    max_epochs: int | None = None
    """Epochs after which an unconverged run gives up; None: the job's."""
    max_power: float | None = None
    """The price of time (W) of the cost the limit and profiling use; None: the job's."""


@dataclass(frozen=True)
class ControlledRun:
    """What one run cost under its controls."""

    power_limit: int
    """The limit it trained at (profiling's choice when it profiled)."""
    epochs: float
    """Epochs trained, the profiling epoch included; 0 when it could not afford one."""
    time_s: float
    energy_j: float
    average_power: float
    """Mean watts of the run (a run at one limit, or one that never started: that limit's)."""
    converged: bool
    profiled: bool

    @property
    def started(self) -> bool:
        return self.epochs > 0


def controlled_run(
    profiles: Sequence[LimitProfile],
    power_limit: int,
    target_epoch: float,
    eta: float,
    max_power: float,
    max_epochs: int,
    controls: RunControls,
) -> ControlledRun:
    """One run that would reach the target at `target_epoch` (NaN: never), at `power_limit`
    (or the limit profiling picks among `profiles`), stopped by `controls`."""
    profiled = controls.profile_power
    max_power = controls.max_power or max_power
    limit = cheapest_limit(profiles, eta, max_power) if profiled else power_limit
    epoch = _profile_at(profiles, limit)
    cap = max_epochs if controls.max_epochs is None else controls.max_epochs
    allowed = epochs_within(controls.cost_limit, epoch.epoch_cost(eta, max_power), cap)
    if allowed == 0:
        return ControlledRun(limit, 0.0, 0.0, 0.0, epoch.average_power, False, profiled)
    converged = not math.isnan(target_epoch) and target_epoch <= allowed
    epochs = float(target_epoch) if converged else float(allowed)
    time_s, energy_j = epochs * epoch.time_per_epoch, epochs * epoch.epoch_energy
    watts = epoch.average_power
    if profiled:
        first = profiling_epoch(profiles)
        time_s += first.time_s - epoch.time_per_epoch
        energy_j += first.energy_j - epoch.epoch_energy
        watts = energy_j / time_s if time_s > 0 else watts
    return ControlledRun(limit, epochs, time_s, energy_j, watts, converged, profiled)


def limit_profiles(
    trace: ZeusTrace, workload: Iterable[str], batch_size: int, power_limits: Iterable[int]
) -> tuple[LimitProfile, ...]:
    """The power trace's epoch at each of `power_limits` for (workload, batch size);
    `UnknownConfigurationError` names a row the trace lacks."""
    key = tuple(workload)
    return tuple(
        LimitProfile(
            int(p),
            trace.time_per_epoch(key, batch_size, int(p)),
            trace.average_power(key, batch_size, int(p)),
        )
        for p in power_limits
    )


def trace_run(
    trace: ZeusTrace,
    workload: Iterable[str],
    batch_size: int,
    power_limit: int,
    target_epoch: float,
    eta: float,
    controls: RunControls,
) -> ControlledRun:
    """`controlled_run` on the traces: profiles over the power limits the trace holds at this
    batch size (only the requested limit when not profiling), the job's `max_power` and
    `max_epochs`."""
    job = trace.job(workload)
    limits = trace.power_limits_at(job.workload, batch_size) if controls.profile_power else ()
    limits = limits or (power_limit,)
    profiles = limit_profiles(trace, job.workload, batch_size, limits)
    return controlled_run(
        profiles, power_limit, target_epoch, eta, job.max_power, job.max_epochs, controls
    )


def simulated_run(
    trace: ZeusTrace,
    workload: Iterable[str],
    batch_size: int,
    power_limit: int | None,
    cost_limit: float | None,
    target_epoch: float,
    eta: float,
    max_epochs: int | None = None,
    max_power: float | None = None,
) -> ControlledRun:
    """One run as Zeus's simulator replays it: at `power_limit`, or, when None, profiling the
    power limits the trace holds at this batch size, from the highest; stopped before the
    epoch that would pass `cost_limit` (None: no limit); at most `max_epochs` epochs (None: the
    job's); time priced at `max_power` (None: the job's); the training run reaches the target
    at `target_epoch` (NaN: never, e.g. a draw of `ZeusTrace.sample_run`)."""
    profile = power_limit is None
    key = tuple(workload)
    held = trace.power_limits_at(key, batch_size) if profile else ()
    limit = max(held or trace.job(key).power_limits) if power_limit is None else power_limit
    controls = RunControls(
        cost_limit=cost_limit, profile_power=profile, max_epochs=max_epochs, max_power=max_power
    )
    return trace_run(trace, key, batch_size, limit, target_epoch, eta, controls)


def _profile_at(profiles: Sequence[LimitProfile], power_limit: int) -> LimitProfile:
    for profile in profiles:
        if profile.power_limit == power_limit:
            return profile
    raise ZeusTraceError(f"No profile was measured at power limit {power_limit} W.")
