"""Power-limit profiling and the early-stopping epoch budget (`zeus_rules`), by hand."""

from __future__ import annotations

import pytest

from discospace.traces.zeus import ZeusTraceError
from discospace.traces.zeus_rules import (
    LimitProfile,
    cheapest_limit,
    epochs_within,
    profiling_epoch,
)

# Epoch costs at eta 0.5, max power 200 W: (0.5 * W + 100) * s
#   100 W: (45 + 100) * 20 = 2900;  150 W: (70 + 100) * 12 = 2040;  200 W: (90 + 100) * 10 = 1900
# At eta 1 (energy only): 1800, 1680, 1800.
PROFILES = (
    LimitProfile(100, time_per_epoch=20.0, average_power=90.0),
    LimitProfile(150, time_per_epoch=12.0, average_power=140.0),
    LimitProfile(200, time_per_epoch=10.0, average_power=180.0),
)


def test_the_epoch_cost_is_the_zeus_equation_seven():
    assert PROFILES[0].epoch_cost(0.5, 200.0) == pytest.approx(2900.0)
    assert PROFILES[1].epoch_cost(1.0, 200.0) == pytest.approx(1680.0)


def test_profiling_keeps_the_limit_of_least_cost_per_epoch():
    assert cheapest_limit(PROFILES, eta=0.5, max_power=200.0) == 200


def test_an_energy_only_cost_prefers_a_lower_limit():
    assert cheapest_limit(PROFILES, eta=1.0, max_power=200.0) == 150


def test_a_tie_keeps_the_higher_limit():
    tied = (LimitProfile(100, 10.0, 100.0), LimitProfile(200, 10.0, 100.0))
    assert cheapest_limit(tied, eta=0.5, max_power=200.0) == 200


def test_profiling_nothing_is_an_error():
    with pytest.raises(ZeusTraceError, match="at least one power limit"):
        cheapest_limit((), 0.5, 200.0)


def test_the_profiling_epoch_costs_the_mean_of_the_limits_epochs():
    epoch = profiling_epoch(PROFILES)
    assert epoch.time_s == pytest.approx((20 + 12 + 10) / 3)
    assert epoch.energy_j == pytest.approx((1800 + 1680 + 1800) / 3)


def test_a_run_stops_before_the_epoch_that_would_pass_the_cost_limit():
    assert epochs_within(1000.0, 300.0, max_epochs=10) == 3


def test_without_a_cost_limit_a_run_may_train_max_epochs():
    assert epochs_within(None, 300.0, max_epochs=10) == 10


def test_a_generous_cost_limit_still_stops_at_max_epochs():
    assert epochs_within(1e9, 300.0, max_epochs=10) == 10


def test_a_limit_below_one_epoch_leaves_no_epoch():
    assert epochs_within(200.0, 300.0, max_epochs=10) == 0
