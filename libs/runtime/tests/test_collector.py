"""The garbage collector of a service process: its young threshold set, start-up frozen (a
service process applying its setting: `test_runner.py`)."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from discospace.runtime.collector import collector_paused, tune_collector


@pytest.fixture
def python_collector() -> Iterator[None]:
    """Python's collector as it was, after the test (thresholds, nothing frozen)."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_tuning_sets_the_young_threshold_keeps_the_older_ones_and_freezes_what_exists(
    python_collector: None,
) -> None:
    _, middle, old = gc.get_threshold()
    kept = _Node()
    tracked = weakref.ref(kept)

    tune_collector(20_000)

    assert gc.get_threshold() == (20_000, middle, old)
    assert gc.get_freeze_count() > 0
    assert not any(obj is kept for obj in gc.get_objects())  # frozen: no generation holds it
    assert tracked() is kept


def test_cyclic_garbage_is_still_collected_once_enough_is_allocated(
    python_collector: None,
) -> None:
    tune_collector(1_000)
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    del first, second

    keep = [[] for _ in range(5_000)]  # tracked allocations, no explicit collect

    assert gone() is None
    assert len(keep) == 5_000


def test_a_threshold_below_one_is_refused_with_a_sentence(python_collector: None) -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(ValueError, match="at least 1, not 0"):
        tune_collector(0)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


def test_the_collector_runs_again_after_the_last_of_overlapping_pauses_even_after_an_error():
    first = collector_paused()
    first.__enter__()
    seen: list[bool] = []

    def second_fold_fails() -> None:
        with collector_paused():
            first.__exit__(None, None, None)
            seen.append(gc.isenabled())
            raise ValueError("a fold failed")

    with pytest.raises(ValueError, match="a fold failed"):
        second_fold_fails()

    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_off_before_the_fold_stays_off_after_it():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_in_several_threads_leave_the_collector_on_once_all_have_ended():
    count = 8
    inside = threading.Barrier(count)
    turns = [threading.Event() for _ in range(count + 1)]
    seen: list[bool] = []

    def pause(turn: int) -> None:
        with collector_paused():
            inside.wait(timeout=10)  # all of them are paused at once
            turns[turn].wait(timeout=10)  # then they end one after another
            seen.append(gc.isenabled())
        turns[turn + 1].set()

    threads = [threading.Thread(target=pause, args=(turn,)) for turn in range(count)]
    for thread in threads:
        thread.start()
    turns[0].set()
    for thread in threads:
        thread.join(timeout=20)

    assert seen == [False] * count  # still off for the last, after the others ended
    assert gc.isenabled()
