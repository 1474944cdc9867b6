"""The memo: completed measurements by sample store, entity and experiment."""

from __future__ import annotations

from discospace.core import entity_id
from discospace.sampler.memo import MemoIndex

POINT = {"batch_size": 4, "gpu_model": "A100"}


def test_a_completed_measurement_is_found_by_store_entity_and_experiment(make):
    memo = MemoIndex()
    event = make.completed(POINT)

    assert memo.record(event)

    found = memo.lookup(make.store, entity_id(POINT), "bench")
    assert found is not None
    assert (found.event_id, found.values, found.is_valid) == (event.event_id, event.values, True)
    assert memo.lookup(make.store, entity_id(POINT), "profile") is None


def test_a_measurement_of_another_sample_store_is_not_found(make):
    memo = MemoIndex()
    memo.record(make.completed(POINT, store="store-b"))

    assert memo.lookup(make.store, entity_id(POINT), "bench") is None
    assert memo.lookup("store-b", entity_id(POINT), "bench") is not None


def test_an_invalid_result_is_memoised_with_its_reason(make):
    memo = MemoIndex()
    memo.record(make.completed(POINT, valid=False))

    found = memo.lookup(make.store, entity_id(POINT), "bench")
    assert found is not None
    assert (found.is_valid, found.invalid_reason) == (False, "out of memory")


def test_the_memo_kept_for_a_pair_does_not_depend_on_the_order_completions_arrive(make):
    invalid_first = make.completed(POINT, operation="op-a", valid=False, minutes=0)
    valid_late = make.completed(POINT, operation="op-b", minutes=20)
    valid_early = make.completed(POINT, operation="op-c", minutes=10)
    events = [invalid_first, valid_late, valid_early]
    kept = set()
    for order in (events, events[::-1], [valid_late, invalid_first, valid_early]):
        memo = MemoIndex()
        for event in order:
            memo.record(event)
        found = memo.lookup(make.store, entity_id(POINT), "bench")
        assert found is not None
        kept.add(found.event_id)

    assert kept == {valid_early.event_id}
    assert len(memo) == 1


def test_a_later_copy_of_the_kept_completion_does_not_replace_it(make):
    """A redelivered request measured again writes its own time and values under the same
    event id: the first copy wins, as for every other consumer (read past the consumer's window
    of seen ids, a valid copy replaced an invalid first one, so the sampler reused a result the
    explorer and the projector did not hold)."""
    first = make.completed(POINT, operation="op-a", valid=False, minutes=0)
    copy = make.completed(POINT, operation="op-a", minutes=120).model_copy(
        update={"event_id": first.event_id}
    )
    memo = MemoIndex()
    assert memo.record(first)
    assert not memo.record(copy)
    found = memo.lookup(make.store, entity_id(POINT), "bench")
    assert found is not None
    assert (found.event_id, found.is_valid) == (first.event_id, False)


def test_a_later_copy_of_a_completion_that_lost_does_not_win(make):
    """Only a copy of the kept completion was recognised: an invalid completion that lost to
    an earlier one came back valid (measured again under its id) and became the memo."""
    kept = make.completed(POINT, operation="op-a", valid=False, minutes=0)
    lost = make.completed(POINT, operation="op-b", valid=False, minutes=10)
    copy = make.completed(POINT, operation="op-b", minutes=20).model_copy(
        update={"event_id": lost.event_id}
    )
    memo = MemoIndex()
    assert [memo.record(e) for e in (kept, lost, copy)] == [True, False, False]
    found = memo.lookup(make.store, entity_id(POINT), "bench")
    assert found is not None
    assert (found.event_id, found.is_valid) == (kept.event_id, False)


def test_a_completion_that_loses_to_the_kept_memo_says_so(make):
    memo = MemoIndex()
    assert memo.record(make.completed(POINT, operation="op-a", minutes=0))
    assert not memo.record(make.completed(POINT, operation="op-b", minutes=5))
