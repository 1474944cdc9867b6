"""Zeus's pruning walk against hand-worked examples (batch sizes 8..128, default 32)."""

from __future__ import annotations

import pytest

from discospace.core import DiscospaceError
from discospace.explorer.operators.zeus.pruning import (
    Explore,
    NoSurvivorError,
    Observation,
    Pruned,
    pruning_state,
)

SIZES = (8, 16, 32, 64, 128)


def ok(batch_size: int, cost: float) -> Observation:
    return Observation(batch_size, cost, True)


def failed(batch_size: int, cost: float = 100.0) -> Observation:
    return Observation(batch_size, cost, False)


def state(*observations: Observation, rounds: int = 2, default: int = 32):
    return pruning_state(SIZES, default, rounds, observations)


def test_the_walk_starts_with_the_default_batch_size():
    assert state() == Explore(32, 0)


def test_the_walk_goes_down_from_the_default_while_sizes_converge():
    assert state(ok(32, 10)) == Explore(16, 0)
    assert state(ok(32, 10), ok(16, 8)) == Explore(8, 0)


def test_a_size_that_did_not_converge_ends_the_walk_down_and_the_walk_goes_up():
    assert state(ok(32, 10), ok(16, 8), failed(8)) == Explore(64, 0)


def test_the_walk_up_is_ascending_and_ends_at_the_largest_size():
    history = (ok(32, 10), ok(16, 8), failed(8), ok(64, 12))
    assert state(*history) == Explore(128, 0)


def test_the_next_round_starts_from_the_cheapest_size_and_keeps_only_converged_sizes():
    first_round = (ok(32, 10), ok(16, 8), failed(8), ok(64, 12), failed(128))
    # Survivors 16, 32, 64; the cheapest (16) is the new default: down is [16], up is [32, 64].
    assert state(*first_round) == Explore(16, 1)
    assert state(*first_round, ok(16, 9)) == Explore(32, 1)
    assert state(*first_round, ok(16, 9), ok(32, 7)) == Explore(64, 1)


def test_pruning_ends_after_the_last_round_with_its_survivors_and_cheapest_size():
    first_round = (ok(32, 10), ok(16, 8), failed(8), ok(64, 12), failed(128))
    second_round = (ok(16, 9), ok(32, 7), failed(64))
    assert state(*first_round, *second_round) == Pruned((16, 32), 32)


def test_a_default_that_does_not_converge_sends_the_walk_straight_up():
    assert state(failed(32)) == Explore(64, 0)


def test_a_non_converged_size_going_up_ends_the_round():
    history = (ok(32, 10), failed(16), failed(64))
    assert state(*history) == Explore(32, 1)
    assert state(*history, ok(32, 11)) == Pruned((32,), 32)


def test_a_concurrent_arrival_of_another_size_does_not_move_the_walk():
    # The walk waits for 16; a concurrent recurrence ran with the cheapest size, 32.
    assert state(ok(32, 10), ok(32, 9)) == Explore(16, 0)
    assert state(ok(32, 10), ok(32, 9), ok(16, 8)) == Explore(8, 0)


def test_a_concurrent_arrival_of_the_expected_size_counts_for_the_walk():
    assert state(ok(32, 10), failed(16)) == Explore(64, 0)


def test_an_equal_cost_keeps_the_earlier_size_as_the_next_default():
    history = (ok(32, 10), ok(16, 10), failed(8), failed(64))
    assert state(*history) == Explore(32, 1)


def test_a_round_with_no_converged_size_is_an_error_that_says_so():
    with pytest.raises(NoSurvivorError, match="no batch size reached the target metric"):
        state(failed(32), failed(64))


def test_the_error_names_the_round_and_the_sizes_tried():
    with pytest.raises(NoSurvivorError, match=r"round 1 \(tried 32, 64\)"):
        state(failed(32), failed(64))


def test_a_default_outside_the_batch_sizes_is_refused():
    with pytest.raises(DiscospaceError, match="default batch size 48 is not one of"):
        state(default=48)


def test_one_round_prunes_once():
    history = (ok(32, 10), failed(16), ok(64, 9), failed(128))
    assert state(*history, rounds=1) == Pruned((32, 64), 64)


def test_zero_rounds_keep_every_size():
    assert state(rounds=0) == Pruned(SIZES, 32)


def test_the_same_history_always_gives_the_same_state():
    history = (ok(32, 10), ok(16, 8), failed(8), ok(64, 12))
    assert state(*history) == state(*history)
