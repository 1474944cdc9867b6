"""`zeus_bso` against Zeus's own trace-driven simulator, run by run.

`data/zeus_reference_v100_movielens_seed50.json` records one job of the Zeus project's simulator
(zeus-ml 0.4.0, `Simulator.simulate_one_job` with `PruningGTSBatchSizeOptimizer` and
`JITPowerLimitOptimizer`, seed 50; V100 movielens-1m/ncf, eta 0.5, beta 2, 182 recurrences): for
every run, the batch size Zeus chose, the training run it drew (its target epoch), the power
limit, whether it profiled, its time, energy and whether it converged; and the bandit's
posterior per arm after the last observation. Replaying Zeus's draws, and its Thompson choices
(they come from its own random stream), through our policy and run rules must give the same
pruning walk, the same early-stopping limits, the same runs and the same posteriors.

This job also shows why a seed can end on a batch size other than the cheapest: the cheapest,
16384, drew its one slow training run (6 epochs instead of 4) in both pruning rounds, so its two
costs differ only by the profiling epoch (6034.2 and 6026.6); the learned reward precision,
1 / variance of those two, leaves its posterior at -6030 with a standard deviation of 2.7, while
the true spread of its cost is about 800. No Thompson draw of 16384 ever beats 8192 again, and
the job ends on 8192 (expected cost 1.20x the cheapest). Zeus's simulator and ours agree on it.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from discospace.bench.zeus_sim import Simulator
from discospace.explorer.operators.zeus.policy import (
    Attempt,
    ZeusSettings,
    next_plan,
    read_history,
    recommendation,
)
from discospace.explorer.operators.zeus.pruning import Explore, pruning_state
from discospace.traces.data import TraceDataMissingError, zeus_data_dir
from discospace.traces.zeus import Workload, ZeusTrace

REFERENCE = Path(__file__).parent / "data" / "zeus_reference_v100_movielens_seed50.json"


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="module")
def sim(reference: dict[str, Any]) -> Simulator:
    try:
        folder = zeus_data_dir()
    except TraceDataMissingError as error:
        pytest.skip(f"the Zeus traces are not here: {error}")
    trace = ZeusTrace.load(folder, reference["gpu"])
    settings = ZeusSettings(eta=reference["eta"], beta=reference["beta"], posterior="zeus")
    return Simulator(trace, Workload(reference["dataset"], reference["network"]), settings)


def _replay(sim: Simulator, runs: list[list[Any]]) -> list[tuple[Attempt, list[Any]]]:
    """Our run for each of Zeus's: our own plan while pruning, Zeus's batch size after."""
    attempts: list[Attempt] = []
    for batch_size, target_epoch, *_ in runs:
        history = read_history(attempts, sim.settings, sim.job)
        plan = next_plan(sim.settings, sim.job, history, (), np.random.default_rng(0))
        assert plan is not None
        if plan.batch_size != batch_size:
            plan = replace(plan, batch_size=batch_size, power_limit=history.limits.get(batch_size))
        epoch = math.nan if target_epoch is None else target_epoch
        attempts.append(sim.run_to(plan, epoch))
    return list(zip(attempts, runs, strict=True))


def _pruning_choices(sim: Simulator, attempts: list[Attempt]) -> list[int]:
    """The batch size our pruning walk asks for before each run, while it walks."""
    choices = []
    for count in range(len(attempts)):
        observations = read_history(attempts[:count], sim.settings, sim.job).observations
        state = pruning_state(
            sim.job.batch_sizes,
            sim.job.default_batch_size,
            sim.settings.num_pruning_rounds,
            observations,
        )
        if not isinstance(state, Explore):
            break
        choices.append(state.batch_size)
    return choices


def test_the_pruning_walk_is_the_one_zeus_takes(sim, reference):
    attempts = [attempt for attempt, _ in _replay(sim, reference["runs"])]
    walk = _pruning_choices(sim, attempts)
    assert walk == [run[0] for run in reference["runs"][: len(walk)]]
    assert walk == [1024, 512, 256, 2048, 4096, 8192, 16384, 8192, 4096, 16384]


def test_every_run_costs_what_it_cost_in_zeus_own_simulator(sim, reference):
    for attempt, (_, _, limit, profiled, time_s, energy_j, converged) in _replay(
        sim, reference["runs"]
    ):
        assert (attempt.power_limit, attempt.profiled, attempt.converged) == (
            limit,
            profiled,
            converged,
        )
        assert attempt.time_s == pytest.approx(time_s, rel=1e-9)
        assert attempt.energy_j == pytest.approx(energy_j, rel=1e-9)


def test_the_posteriors_and_the_final_choice_are_zeus_own(sim, reference):
    attempts = [attempt for attempt, _ in _replay(sim, reference["runs"])]
    history = read_history(attempts, sim.settings, sim.job)
    assert history.recurrences == reference["recurrences"]
    for arm, expected in reference["final_posteriors"].items():
        rewards = [-o.cost for o in history.observations if o.batch_size == int(arm)]
        posterior = sim.settings.bandit.posteriors({int(arm): rewards})[int(arm)]
        assert posterior.mean == pytest.approx(expected["mean"], rel=1e-9)
        assert posterior.precision == pytest.approx(expected["precision"], rel=1e-6)
    choice = recommendation(sim.settings, sim.job, history)
    assert choice is not None
    assert (choice.batch_size, choice.power_limit) == (8192, 125)


def test_two_nearly_equal_costs_pin_the_cheapest_size_out_of_the_bandit(sim, reference):
    attempts = [attempt for attempt, _ in _replay(sim, reference["runs"])]
    history = read_history(attempts, sim.settings, sim.job)
    costs = [o.cost for o in history.observations if o.batch_size == 16384]
    assert costs == [pytest.approx(6034.2, abs=0.1), pytest.approx(6026.6, abs=0.1)]
    posterior = sim.settings.bandit.posteriors({16384: [-c for c in costs]})[16384]
    assert 1.0 / math.sqrt(posterior.precision) == pytest.approx(2.66, abs=0.01)
    assert sim.trace.oracle(sim.workload).batch_size == 16384


def test_the_robust_posterior_keeps_the_cheapest_size_as_uncertain_as_the_job_noise(sim, reference):
    """The same history read by the default (robust) posterior: the variance pooled over the
    bandit's arms leaves 16384's mean about as uncertain as the job's runs really are, so a
    Thompson draw can still bring the bandit back to it."""
    attempts = [attempt for attempt, _ in _replay(sim, reference["runs"])]
    history = read_history(attempts, sim.settings, sim.job)
    two_runs = read_history(attempts[:10], sim.settings, sim.job)
    arms = {8192, 16384, 4096}
    robust = replace(sim.settings, posterior="robust").bandit
    rewards = {arm: [-o.cost for o in two_runs.observations if o.batch_size == arm] for arm in arms}
    spread = 1.0 / math.sqrt(robust.posteriors(rewards)[16384].precision)
    assert spread > 100 * 2.66
    assert history.recurrences == reference["recurrences"]
