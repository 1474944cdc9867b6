"""The Zeus batch-size optimizer's decisions, from hand-built histories of runs."""

from __future__ import annotations

import math

import pytest

from discospace.core import DiscospaceError
from discospace.explorer.operators.zeus.policy import (
    MAX_TRIES,
    Attempt,
    Choice,
    Job,
    Plan,
    ZeusSettings,
    decision_rng,
    next_plan,
    read_history,
    recommendation,
)
from discospace.explorer.operators.zeus.pruning import NoSurvivorError

JOB = Job(
    batch_sizes=(8, 16, 32, 64), default_batch_size=32, power_limits=(100, 200), max_power=200
)
SETTINGS = ZeusSettings(eta=0.5, beta=2.0)


def run(batch_size: int, cost: float, converged: bool = True, limit: int = 200) -> Attempt:
    """A run whose Zeus cost is `cost` (at eta 0.5, energy 2 * cost and no time)."""
    return Attempt(batch_size, limit, time_s=0.0, energy_j=2 * cost, converged=converged)


def never_ran(batch_size: int, limit: int = 200) -> Attempt:
    return Attempt(batch_size, limit, 0.0, 0.0, False)


def plan(*attempts: Attempt, in_flight: tuple[int, ...] = (), decision: int = 0) -> Plan | None:
    history = read_history(attempts, SETTINGS, JOB)
    return next_plan(SETTINGS, JOB, history, in_flight, decision_rng(7, decision))


def test_the_cost_weighs_energy_by_eta_and_time_by_max_power():
    attempt = Attempt(32, 200, time_s=10.0, energy_j=1000.0, converged=True)
    history = read_history([attempt], SETTINGS, JOB)
    assert history.costs == (0.5 * 1000 + 0.5 * 200 * 10,)


def test_the_first_run_profiles_power_at_the_default_batch_size_without_a_cost_limit():
    assert plan() == Plan(32, None, None)


def test_the_next_run_is_stopped_at_beta_times_the_cheapest_recurrence():
    assert plan(run(32, 1500.0, limit=100)) == Plan(16, None, 3000.0)


def test_a_batch_size_keeps_the_power_limit_its_first_run_chose():
    first_round = (run(32, 10, limit=100), run(16, 12, limit=200), run(8, 9, False))
    first_round += (run(64, 20, False),)
    assert plan(*first_round) == Plan(32, 100, 20.0)


def test_a_limit_profiling_chose_outside_the_space_is_its_nearest_limit_in_the_space():
    """Profiling chooses among every limit the GPU has: 150 W for a space of 175-250 W was
    proposed for the next runs of that size, and the space refused the entity."""
    some = Job(batch_sizes=(8, 16, 32, 64), default_batch_size=32, power_limits=(175, 250),
               max_power=250)  # fmt: skip
    first_round = (run(32, 10, limit=150), run(16, 12, limit=250), run(8, 9, False))
    first_round += (run(64, 20, False),)
    history = read_history(first_round, SETTINGS, some)

    assert next_plan(SETTINGS, some, history, (), decision_rng(7, 0)) == Plan(32, 175, 20.0)
    assert [some.allowed(limit) for limit in (212, 213, 250)] == [175, 250, 250]


def test_failed_attempts_count_in_their_recurrence_cost():
    history = read_history([run(32, 300.0, converged=False), run(64, 1000.0)], SETTINGS, JOB)
    assert history.min_cost == 1300.0
    assert history.cheapest == 64
    assert history.recurrences == 1


def test_a_run_that_never_started_is_observed_at_a_hundred_times_the_limit_and_costs_nothing():
    history = read_history([run(32, 10.0), never_ran(16)], SETTINGS, JOB)
    assert history.observations[-1].cost == 100 * 2.0 * 10.0
    assert not history.observations[-1].converged
    assert history.costs == (10.0, 0.0)
    assert history.failed_in_a_row == 1


def test_a_never_started_run_ends_the_walk_in_its_direction():
    assert plan(run(32, 10.0), never_ran(16)).batch_size == 64


def test_while_the_explored_size_is_in_flight_another_run_gets_the_cheapest_size():
    assert plan(run(32, 10.0, limit=100), in_flight=(16,)) == Plan(32, 100, 20.0)


def test_before_anything_converged_a_concurrent_run_waits():
    assert plan(in_flight=(32,)) is None


def test_a_concurrent_arrival_does_not_move_the_walk():
    # 16 is being explored; a concurrent run of 32 lands first.
    assert plan(run(32, 10.0), run(32, 11.0), in_flight=(16,)).batch_size == 32
    assert plan(run(32, 10.0), run(32, 11.0)).batch_size == 16


def test_after_pruning_the_bandit_picks_among_survivors_only():
    pruned = (run(32, 10), run(16, 10.2), run(8, 9, False), run(64, 20, False))
    pruned += (run(32, 11), run(16, 11.4))
    picks = {plan(*pruned, decision=k).batch_size for k in range(30)}
    assert picks <= {16, 32}
    assert picks == {16, 32}, "both survivors are uncertain enough to be drawn"


def test_the_same_history_and_decision_number_give_the_same_plan():
    pruned = (run(32, 10), run(16, 10.2), run(8, 9, False), run(64, 20, False))
    pruned += (run(32, 11), run(16, 11.4))
    assert [plan(*pruned, decision=k) for k in range(10)] == [
        plan(*pruned, decision=k) for k in range(10)
    ]


def test_no_converged_size_in_a_round_is_an_error():
    with pytest.raises(NoSurvivorError):
        plan(run(32, 10, False), run(64, 10, False))


def test_a_recurrence_failing_twenty_times_is_an_error():
    history = [run(32, 10.0)] + [run(32, 10.0, converged=False)] * MAX_TRIES
    with pytest.raises(DiscospaceError, match="20 attempts"):
        plan(*history)


def test_the_history_counts_converged_runs_as_recurrences():
    history = read_history([run(32, 1), run(16, 2, False), run(64, 3)], SETTINGS, JOB)
    assert history.recurrences == 2
    assert math.isfinite(history.min_cost)


def test_the_recommendation_is_the_cheapest_converged_size_during_pruning():
    history = read_history([run(32, 10.0, limit=100), run(16, 8.0)], SETTINGS, JOB)
    assert recommendation(SETTINGS, JOB, history) == Choice(16, 200)


def test_the_recommendation_after_pruning_is_the_best_posterior_mean():
    pruned = (run(32, 10), run(16, 10.2), run(8, 9, False), run(64, 20, False))
    pruned += (run(32, 11), run(16, 11.4))
    history = read_history(pruned, SETTINGS, JOB)
    assert recommendation(SETTINGS, JOB, history) == Choice(32, 200)


@pytest.mark.parametrize("posterior", ["robust", "zeus"])
def test_without_pruning_rounds_the_recommendation_is_a_size_that_converged(posterior):
    """Without pruning every size survives: one not run yet had the flat prior's mean (cost
    0) and the choice was None; one that never converged, stopped cheaply, was chosen."""
    settings = ZeusSettings(eta=0.5, beta=2.0, num_pruning_rounds=0, posterior=posterior)
    some = [run(32, 1000.0), run(32, 1100.0), run(16, 900.0)]
    every = [*some, run(16, 950.0), run(8, 300.0, False), run(8, 300.0, False)]
    every += [run(64, 2000.0), run(64, 2100.0)]
    for attempts in (some, every):
        history = read_history(attempts, settings, JOB)
        assert recommendation(settings, JOB, history) == Choice(16, 200)


def test_a_run_costing_more_than_the_bandit_compares_is_one_sentence():
    """Costs near 1e160 (finite results) raised `OverflowError` in the bandit: the operation
    failed without a sentence saying why."""
    with pytest.raises(DiscospaceError, match=r"a run of batch size 32 cost 1e\+160"):
        read_history([run(32, 1e160)], SETTINGS, JOB)


def test_there_is_no_recommendation_before_a_run_converged():
    assert recommendation(SETTINGS, JOB, read_history([], SETTINGS, JOB)) is None
