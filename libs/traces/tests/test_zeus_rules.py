"""Zeus's run controls (early stopping, power profiling, epoch cap), by hand."""

import io
import math

import pandas as pd
import pytest

from discospace.traces.zeus import UnknownConfigurationError, ZeusTrace, ZeusTraceError
from discospace.traces.zeus_rules import (
    LimitProfile,
    RunControls,
    cheapest_limit,
    controlled_run,
    epochs_within,
    limit_profiles,
    profiling_epoch,
    simulated_run,
    trace_run,
)

# eta 0.5, max power 200 W: epoch cost (0.5 * W + 100) * s, epoch energy W * s.
#   100 W: 20 s, 90 W -> cost 2900, energy 1800;   150 W: 12 s, 140 W -> 2040, 1680;
#   200 W: 10 s, 180 W -> 1900, 1800.  Profiling epoch: T 14, E 1760.
PROFILES = (
    LimitProfile(100, time_per_epoch=20.0, average_power=90.0),
    LimitProfile(150, time_per_epoch=12.0, average_power=140.0),
    LimitProfile(200, time_per_epoch=10.0, average_power=180.0),
)
ETA, MAX_POWER, MAX_EPOCHS = 0.5, 200.0, 10


def run(target_epoch: float, power_limit: int = 150, **controls: object):
    return controlled_run(
        PROFILES, power_limit, target_epoch, ETA, MAX_POWER, MAX_EPOCHS, RunControls(**controls)
    )


def test_the_rules_refuse_what_cannot_be_costed_with_one_sentence() -> None:
    with pytest.raises(ZeusTraceError, match="at least one power limit"):
        cheapest_limit((), ETA, MAX_POWER)
    with pytest.raises(ZeusTraceError, match="at least one power limit"):
        profiling_epoch(())
    with pytest.raises(ZeusTraceError, match="must be positive"):
        epochs_within(100.0, 0.0, MAX_EPOCHS)


def test_an_uncontrolled_run_trains_to_its_target_at_its_limit() -> None:
    got = run(4.0)

    assert (got.power_limit, got.epochs, got.converged, got.profiled) == (150, 4.0, True, False)
    assert got.time_s == pytest.approx(48.0)
    assert got.energy_j == pytest.approx(6720.0)
    assert got.average_power == 140.0


def test_a_run_that_never_reaches_the_target_pays_max_epochs() -> None:
    got = run(math.nan)

    assert (got.epochs, got.converged) == (10.0, False)
    assert got.time_s == pytest.approx(120.0)


def test_a_cost_limit_stops_the_run_before_the_epoch_that_would_pass_it() -> None:
    # 7000 affords 3 epochs of 2040 (6120); the 4th would cost 8160.
    got = run(5.0, cost_limit=7000.0)

    assert (got.epochs, got.converged) == (3.0, False)
    assert got.time_s == pytest.approx(36.0)
    assert got.energy_j == pytest.approx(5040.0)


def test_a_run_within_its_cost_limit_converges() -> None:
    assert run(3.0, cost_limit=7000.0).converged


def test_a_run_that_cannot_afford_one_epoch_never_starts() -> None:
    got = run(2.0, cost_limit=2000.0)

    assert (got.epochs, got.time_s, got.energy_j, got.converged, got.started) == (
        0.0,
        0.0,
        0.0,
        False,
        False,
    )


def test_an_epoch_cap_ends_a_run_that_has_not_converged() -> None:
    got = run(6.0, max_epochs=4)

    assert (got.epochs, got.converged) == (4.0, False)
    assert run(6.0, max_epochs=8).converged


def test_profiling_splits_the_first_epoch_and_trains_the_rest_at_the_cheapest_limit() -> None:
    # Cheapest: 200 W (1900). Target 4: T 3 * 10 + 14 = 44, E 3 * 1800 + 1760 = 7160.
    got = run(4.0, power_limit=200, profile_power=True)

    assert (got.power_limit, got.epochs, got.converged, got.profiled) == (200, 4.0, True, True)
    assert got.time_s == pytest.approx(44.0)
    assert got.energy_j == pytest.approx(7160.0)
    assert got.average_power == pytest.approx(7160.0 / 44.0)


def test_a_profiled_run_stops_at_the_epoch_cost_of_the_limit_it_trains_at() -> None:
    # 6000 affords 3 epochs of 1900 at 200 W: T 2 * 10 + 14 = 34.
    got = run(8.0, power_limit=200, profile_power=True, cost_limit=6000.0)

    assert (got.power_limit, got.epochs, got.converged) == (200, 3.0, False)
    assert got.time_s == pytest.approx(34.0)


TRAIN = """dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch
squad,bert,8,adamw,1e-5,1,84.0,2
"""
POWER = """dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power
squad,bert,8,adamw,100,20,90
squad,bert,8,adamw,150,12,140
squad,bert,8,adamw,200,10,180
"""


@pytest.fixture
def trace() -> ZeusTrace:
    return ZeusTrace.from_frames(
        pd.read_csv(io.StringIO(TRAIN)), pd.read_csv(io.StringIO(POWER)), "v100"
    )


def test_on_a_trace_profiling_covers_the_jobs_power_limits(trace: ZeusTrace) -> None:
    assert limit_profiles(trace, ("squad", "bert"), 8, (100, 150, 200)) == PROFILES
    got = trace_run(trace, ("squad", "bert"), 8, 200, 4.0, ETA, RunControls(profile_power=True))

    assert (got.power_limit, got.time_s) == (200, pytest.approx(44.0))


def test_on_a_trace_the_job_sets_max_power_and_max_epochs(trace: ZeusTrace) -> None:
    # squad: 6 epochs at most; max power 200 W, so 150 W costs 2040 per epoch.
    never = trace_run(trace, ("squad", "bert"), 8, 150, math.nan, ETA, RunControls())
    stopped = trace_run(trace, ("squad", "bert"), 8, 150, 5.0, ETA, RunControls(cost_limit=7000))

    assert (never.epochs, stopped.epochs) == (6.0, 3.0)


def test_on_a_trace_a_limit_it_lacks_is_named(trace: ZeusTrace) -> None:
    with pytest.raises(UnknownConfigurationError, match="power limit 175 W"):
        trace_run(trace, ("squad", "bert"), 8, 175, 2.0, ETA, RunControls())


def test_profiling_a_batch_size_lacking_a_limit_covers_only_the_limits_it_has() -> None:
    # Batch size 16 has no 100 W row: profiling covers 150 and 200 W (T (12 + 10) / 2 = 11).
    power = POWER + "squad,bert,16,adamw,150,12,140\nsquad,bert,16,adamw,200,10,180\n"
    train = TRAIN + "squad,bert,16,adamw,1e-5,1,84.0,3\n"
    trace = ZeusTrace.from_frames(
        pd.read_csv(io.StringIO(train)), pd.read_csv(io.StringIO(power)), "v100"
    )

    got = trace_run(trace, ("squad", "bert"), 16, 200, 3.0, ETA, RunControls(profile_power=True))
    planned = simulated_run(trace, ("squad", "bert"), 16, None, None, 3.0, ETA)

    assert (got.power_limit, got.time_s) == (200, pytest.approx(11.0 + 2 * 10.0))
    assert planned == got


def test_a_run_is_stopped_and_profiled_at_the_max_power_its_optimizer_prices_time_with():
    """The actuator priced time at the GPU's highest limit, the optimizer at the highest of
    its space's: the same limit stopped runs short that the optimizer meant to converge."""
    profiles = (LimitProfile(100, 20.0, 90.0), LimitProfile(150, 12.0, 140.0))
    at_gpu = RunControls(cost_limit=20_000.0)
    at_space = RunControls(cost_limit=20_000.0, max_power=150.0)

    gpu = controlled_run(profiles, 150, 10.0, 0.5, 250.0, 50, at_gpu)
    space = controlled_run(profiles, 150, 10.0, 0.5, 250.0, 50, at_space)

    assert (gpu.converged, gpu.epochs) == (False, 8.0)  # (0.5*140 + 0.5*250) * 12: 2340 an epoch
    assert (space.converged, space.epochs) == (True, 10.0)  # (0.5*140 + 0.5*150) * 12: 1740
