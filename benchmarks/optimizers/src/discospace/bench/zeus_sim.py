"""The Zeus traces as the job `zeus_bso` optimises: runs replayed as the paper's simulator does.

Follows `Simulator` of the Zeus project (ml-energy/zeus, `zeus/simulate.py`): a run draws one
training run (a seed of the train trace) for its batch size; a run whose `target_epoch` is
missing or above `max_epochs` pays `max_epochs` epochs and does not converge; early stopping
ends a run before the epoch that would pass its cost limit (a run that cannot afford one epoch
never starts); a batch size's first run profiles every power limit in its first epoch (that
epoch costs the mean of the limits' epochs) and trains the other epochs at the cheapest limit.
A (batch size, power limit) the power trace has no row for is never run: profiling covers the
limits a batch size has, random choice draws among the `configurations` there are.

Three drivers, one run at a time (`2 * |B| * |P|` recurrences in the paper, `2 *` the
combinations there are when a trace lacks some):
`simulate_operator` runs the `zeus_bso` operator itself on views, as the explorer would, and
applies its run controls as an actuator would; `simulate_zeus` calls the policy directly (the
same decisions, a cross-check); `simulate_random` draws a configuration uniformly for every run.
Randomness comes from the seed and the run's number only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import numpy as np
from pydantic import JsonValue

from discospace.core import EntitySpace, PropertySpec
from discospace.events import OperationParameters
from discospace.events.common import PropertyValues
from discospace.explorer.domain.operator import Finish, Measure, OperationView
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace
from discospace.explorer.operators.zeus.operator import ZeusBso
from discospace.explorer.operators.zeus.policy import (
    Attempt,
    Job,
    Plan,
    ZeusSettings,
    decision_rng,
    next_plan,
    read_history,
)
from discospace.traces.zeus import Workload, ZeusTrace
from discospace.traces.zeus_rules import simulated_run

BENCH_TIME = datetime(2026, 1, 1, tzinfo=UTC)
"""The (unused) clock of the operator's views: its decisions never read the time."""
RANDOM_TRIES = 1000
"""Attempts of one recurrence random choice may spend before the benchmark gives up."""


class Simulator:
    """Runs of one workload's job on one GPU, replayed from the traces."""

    def __init__(self, trace: ZeusTrace, workload: Workload, settings: ZeusSettings) -> None:
        self.trace, self.workload, self.settings = trace, workload, settings
        zeus_job = trace.job(workload)
        self.max_epochs = zeus_job.max_epochs
        self.job = Job(
            zeus_job.batch_sizes,
            zeus_job.default_batch_size,
            zeus_job.power_limits,
            zeus_job.max_power,
        )

    def run(self, plan: Plan, rng: np.random.Generator, max_power: float | None = None) -> Attempt:
        """One run of `plan` on a training run drawn with `rng`, under the rules the replay
        actuator applies (`discospace.traces.zeus_rules.simulated_run`)."""
        epoch = self.trace.sample_run(self.workload, plan.batch_size, rng)
        return self.run_to(plan, epoch, max_power)

    def run_to(self, plan: Plan, target_epoch: float, max_power: float | None = None) -> Attempt:
        """One run of `plan` on the training run that reaches the target at `target_epoch`
        (NaN: never), e.g. one a reference simulator drew; time priced at `max_power` (the
        operator's, as its run controls send it; None: the job's)."""
        run = simulated_run(
            self.trace,
            self.workload,
            plan.batch_size,
            plan.power_limit,
            plan.cost_limit,
            target_epoch,
            self.settings.eta,
            self.max_epochs,
            max_power,
        )
        return Attempt(
            plan.batch_size,
            run.power_limit,
            run.time_s,
            run.energy_j,
            run.converged,
            run.profiled,
            run.epochs,
        )

    def recurrences(self) -> int:
        """The paper's `2 * |B| * |P|`, counting only the (batch size, power limit)
        combinations the trace holds (the same where none is missing)."""
        return 2 * len(self.configurations())

    def configurations(self) -> tuple[tuple[int, int], ...]:
        """The (batch size, power limit) combinations a run may use: those with a power row."""
        return self.trace.configurations(self.workload)


def run_rng(seed: int, attempt: int) -> np.random.Generator:
    """The generator that draws the training run of one attempt, from (seed, attempt) only
    (a stream apart from the optimizer's `decision_rng`)."""
    return np.random.default_rng([seed % 2**64, attempt, 1])


def simulate_zeus(sim: Simulator, seed: int, recurrences: int) -> list[Attempt]:
    """Run `zeus_bso` sequentially for `recurrences` recurrences; the attempts, in order."""
    attempts: list[Attempt] = []
    history = read_history(attempts, sim.settings, sim.job)
    while history.recurrences < recurrences:
        decision = decision_rng(seed, len(attempts))
        plan = next_plan(sim.settings, sim.job, history, (), decision)
        assert plan is not None, "a sequential job never waits"
        attempts.append(sim.run(plan, run_rng(seed, len(attempts))))
        history = read_history(attempts, sim.settings, sim.job)
    return attempts


RunDraw = Callable[[PropertyValues, int], np.random.Generator]
"""The generator that picks the training run of a requested point (its values, and how many
runs came before it)."""


def simulate_operator(
    sim: Simulator, seed: int, recurrences: int, draw: RunDraw | None = None
) -> list[Attempt]:
    """The same job through the `zeus_bso` operator itself, one run at a time: views in,
    proposals out, each proposal's run controls (`cost_limit`, `profile_power`) applied by the
    simulator as an actuator would. Gives the attempts of `simulate_zeus` for the same seed.

    `draw` picks each run's training run (default `run_rng(seed, run number)`); pass the
    replay actuator's own seeding to reproduce a run through the services."""
    return simulate_job(sim, seed, recurrences, draw).attempts


@dataclass(frozen=True)
class SimulatedJob:
    """A job through the operator: its attempts, and its results as the store keeps them."""

    attempts: list[Attempt]
    results: list[PairResult]
    choice: tuple[int, int] | None = None
    """The operator's own final choice (batch size, power limit), as it reports it."""


def simulate_job(
    sim: Simulator,
    seed: int,
    recurrences: int,
    draw: RunDraw | None = None,
    elsewhere: Sequence[PairResult] = (),
) -> SimulatedJob:
    """`simulate_operator`, on a space whose entities carry `gpu_model` (the trace's GPU), with
    `elsewhere` as the store's results outside the space (`OperationView.store_elsewhere`:
    e.g. a finished job of the same workload on another GPU)."""
    space = _operator_space(sim)
    options = {
        **_options(sim.settings),
        "default_batch_size": sim.job.default_batch_size,
        "max_power": sim.job.max_power,
    }
    parameters = OperationParameters(
        seed=seed, single_measurement=False, options={**options, "recurrences": recurrences}
    )
    operator, attempts, outcomes = ZeusBso(), list[Attempt](), list[PairResult]()
    while True:
        view = _view(space, parameters, outcomes, elsewhere)
        proposal = operator.propose(view)
        if isinstance(proposal, Finish):
            return SimulatedJob(attempts, outcomes, _chosen(operator, view))
        assert isinstance(proposal, Measure), f"a sequential job never gets {proposal}"
        point, controls = proposal.points[0], proposal.inputs[0]
        plan = Plan(
            _whole(point["batch_size"]),
            None if controls.get("profile_power") else _whole(point["power_limit"]),
            _float(controls.get("cost_limit")),
        )
        rng = run_rng(seed, len(attempts)) if draw is None else draw(point, len(attempts))
        attempt = sim.run(plan, rng, _float(controls.get("max_power")))
        attempts.append(attempt)
        outcomes.append(_outcome(point, attempt, len(outcomes)))


def _chosen(operator: ZeusBso, view: OperationView) -> tuple[int, int] | None:
    told = operator.choice(view)
    if told is None or not told.values:
        return None
    return _whole(told.values["batch_size"]), _whole(told.values["power_limit"])


def _operator_space(sim: Simulator) -> KnownSpace:
    properties = (
        PropertySpec(name="dataset", values=(sim.workload.dataset,)),
        PropertySpec(name="network", values=(sim.workload.network,)),
        PropertySpec(name="gpu_model", values=(sim.trace.gpu,)),
        PropertySpec(name="batch_size", values=sim.job.batch_sizes),
        PropertySpec(name="power_limit", values=sim.job.power_limits),
        PropertySpec(name="recurrence", range=(0, 1_000_000), interval=1),
    )
    return KnownSpace("bench", "bench", EntitySpace.from_specs(properties), ())


def _options(settings: ZeusSettings) -> dict[str, JsonValue]:
    return dict(asdict(settings))


def _whole(value: object) -> int:
    assert isinstance(value, int | float)
    return int(value)


def _float(value: object) -> float | None:
    if value is None:
        return None
    assert isinstance(value, int | float)
    return float(value)


def _view(
    space: KnownSpace,
    parameters: OperationParameters,
    outcomes: list[PairResult],
    elsewhere: Sequence[PairResult] = (),
) -> OperationView:
    return OperationView(
        operation_id="bench",
        parameters=parameters,
        space=space,
        started_at=BENCH_TIME,
        now=BENCH_TIME,
        free_slots=1,
        in_flight=0,
        drawn_by_strategy=0,
        entities_drawn=0,
        exhausted=False,
        entities={o.entity_id: o.entity_values for o in outcomes},
        outcomes=tuple(outcomes),
        best=None,
        store_elsewhere=tuple(elsewhere),
    )


def _outcome(point: PropertyValues, attempt: Attempt, index: int) -> PairResult:
    values: PropertyValues = {
        "time_to_accuracy": attempt.time_s,
        "energy_to_accuracy": attempt.energy_j,
        "converged": int(attempt.converged),
    }
    if attempt.profiled:
        values["trained_power_limit"] = attempt.power_limit
    if attempt.epochs is not None:
        values["target_epoch"] = attempt.epochs
    return PairResult(f"run-{index}", dict(point), "train_to_target", True, values, None, False)


def simulate_random(sim: Simulator, seed: int, recurrences: int) -> list[Attempt]:
    """A configuration drawn uniformly for every attempt (among those the trace holds), no
    early stopping."""
    configurations = sim.configurations()
    attempts: list[Attempt] = []
    for _ in range(recurrences):
        for _ in range(RANDOM_TRIES):
            pick = decision_rng(seed, len(attempts)).integers(len(configurations))
            b, p = configurations[int(pick)]
            attempt = sim.run(Plan(b, p, None), run_rng(seed, len(attempts)))
            attempts.append(attempt)
            if attempt.converged:
                break
        else:
            raise RuntimeError(f"random choice did not converge in {RANDOM_TRIES} attempts")
    return attempts
