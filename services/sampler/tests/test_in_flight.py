"""Measurements in flight: a pair of a shared store is measured once, however many operations
ask for it at once (hand-worked event sequences through the pure rules and one handler)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from discospace.core import ExperimentSpec
from discospace.events import (
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    SamplesRequested,
    new_event,
)
from discospace.events.envelope import caused_event_id
from discospace.sampler.answers import Waiting
from discospace.sampler.domain import (
    SamplerState,
    decide,
    end,
    evolve_pools,
    evolve_space,
    evolve_started,
    fail,
    hold_sent,
    land,
    stop_waiting,
    take,
)
from discospace.sampler.inflight import Holder, InFlight, Waiter

POINT = {"batch_size": 2, "gpu_model": "A100"}
OTHER = {"batch_size": 4, "gpu_model": "A100"}
KEY = ("store-a", "e-1", "bench")


@pytest.fixture
def state(make) -> SamplerState:
    state = SamplerState()
    evolve_space(state, make.registered())
    evolve_pools(state, make.pool("a100", "A100"))
    return state


def _request(make, operation: str, *points: dict[str, Any]) -> SamplesRequested:
    return make.request(make.registered(), operation_id=operation, points=points)


def _decide_and_take(state: SamplerState, request: SamplesRequested, make) -> list[Any]:
    return take(state, decide(state, request, make.at))


def _failed(requested: MeasurementRequested, make, retryable: bool = False) -> MeasurementFailed:
    subject = requested.model_dump(
        include={"operation_id", "request_id", "space_id", "sample_store", "entity_id"}
        | {"entity_values", "experiment_id"}
    )
    return MeasurementFailed.caused_by(
        requested,
        make.at,
        worker_id="w0",
        reason="node lost",
        retryable=retryable,
        attempt=requested.attempt,
        **subject,
    )


def _started(requested: MeasurementRequested, make) -> MeasurementStarted:
    subject = requested.model_dump(
        include={"operation_id", "request_id", "space_id", "sample_store", "entity_id"}
        | {"entity_values", "experiment_id"}
    )
    return new_event(MeasurementStarted, lambda: make.at, worker_id="w0", **subject)


def _waiter(operation: str, request_id: str) -> Waiter:
    return Waiter(KEY, request_id, operation, f"ev-{request_id}", payload=None)


def test_a_key_in_flight_hands_its_waiters_back_once_when_a_completion_lands():
    in_flight = InFlight()
    in_flight.hold(KEY, "req-a")
    in_flight.wait(_waiter("op-b", "req-b"))
    in_flight.wait(_waiter("op-b", "req-b"))
    in_flight.wait(_waiter("op-c", "req-c"))

    landed = in_flight.land(KEY)

    assert [w.request_id for w in landed] == ["req-b", "req-c"]
    assert in_flight.land(KEY) == []
    assert in_flight.holder(KEY) is None


def test_only_the_holders_failure_frees_the_key_and_hands_back_the_first_waiter():
    in_flight = InFlight()
    in_flight.hold(KEY, "req-a")
    in_flight.wait(_waiter("op-b", "req-b"))
    in_flight.wait(_waiter("op-c", "req-c"))

    assert in_flight.fail(KEY, "req-other") is None
    first = in_flight.fail(KEY, "req-a")

    assert first is not None
    assert first.request_id == "req-b"
    assert in_flight.holder(KEY) is None
    assert in_flight.waiting_for("ev-req-c") == 1


def test_an_ended_operation_drops_its_waiters_and_keeps_the_others():
    in_flight = InFlight()
    in_flight.hold(KEY, "req-a")
    in_flight.wait(_waiter("op-b", "req-b"))
    in_flight.wait(_waiter("op-c", "req-c"))

    dropped = in_flight.end("op-b")

    assert [w.request_id for w in dropped] == ["req-b"]
    assert [w.request_id for w in in_flight.land(KEY)] == ["req-c"]


def test_a_second_operation_waits_for_a_pair_in_flight_and_reuses_it_when_it_lands(state, make):
    first = _request(make, "op-a", POINT)
    second = _request(make, "op-b", OTHER, POINT)

    [_, requested_a] = _decide_and_take(state, first, make)
    decided = decide(state, second, make.at)
    published = take(state, decided)
    completed = make.completed(POINT, operation="op-a")

    deferred = land(state, completed, make.at)

    assert isinstance(requested_a, MeasurementRequested)
    waiting = [item for item in decided if isinstance(item, Waiting)]
    assert [w.pair.entity.as_dict() for w in waiting] == [POINT]
    assert [(type(e), e.entity_values) for e in published[1:]] == [(MeasurementRequested, OTHER)]
    assert state.in_flight.waiting_for(second.event_id) == 0
    [reused] = deferred
    assert isinstance(reused, MeasurementReused)
    assert reused.reused_event_id == completed.event_id
    assert reused.operation_id == "op-b"
    assert reused.event_id == caused_event_id(second.event_id, 1, "MeasurementReused")
    assert land(state, completed, make.at) == []


def test_pairs_held_by_both_operations_wait_on_each_other_only_where_they_overlap(state, make):
    _decide_and_take(state, _request(make, "op-a", POINT), make)

    published = _decide_and_take(state, _request(make, "op-b", OTHER, POINT), make)

    assert [(type(e), e.entity_values) for e in published[1:]] == [(MeasurementRequested, OTHER)]


def _two_waiting_on_one(state: SamplerState, make) -> tuple[Any, Any, Any, MeasurementRequested]:
    """Operations a, b and c ask for POINT in turn: a's request is sent, b and c wait on it;
    the three requests and a's measurement request."""
    requests = [_request(make, op, POINT) for op in ("op-a", "op-b", "op-c")]
    [_, requested_a] = _decide_and_take(state, requests[0], make)
    for waiting in requests[1:]:
        _decide_and_take(state, waiting, make)
    return (*requests, requested_a)


def test_when_the_measurement_in_flight_fails_the_first_waiter_is_sent_to_the_pool(state, make):
    _, second, _, requested_a = _two_waiting_on_one(state, make)

    [requested_b] = fail(state, _failed(requested_a, make), make.at)
    again = fail(state, _failed(requested_a, make), make.at)
    deferred = land(state, make.completed(POINT, operation="op-b"), make.at)

    assert isinstance(requested_b, MeasurementRequested)
    assert requested_b.operation_id == "op-b"
    assert requested_b.event_id == caused_event_id(second.event_id, 0, "MeasurementRequested")
    assert again == []
    assert [(type(e), e.operation_id) for e in deferred] == [(MeasurementReused, "op-c")]


def test_when_no_pool_can_take_the_first_waiter_the_next_waiters_are_answered_too(state, make):
    """The first waiter, handed back, was answered by the sampler's own failure (the pool no
    longer offers the experiment), which holds no key: the waiters after it waited for a holder
    that never came, their requests' offsets held until their wait ran out."""
    _, _, third, requested_a = _two_waiting_on_one(state, make)
    profile = ExperimentSpec(actuator="synthetic", experiment="profile", target_properties=("m",))
    evolve_pools(state, make.pool("a100", "A100", profile))  # no bench any more

    answers = fail(state, _failed(requested_a, make), make.at)

    assert [(type(e), e.operation_id) for e in answers] == [
        (MeasurementFailed, "op-b"),
        (MeasurementFailed, "op-c"),
    ]
    assert state.in_flight.waiting_for(third.event_id) == 0


def test_the_holders_own_retry_is_not_made_to_wait_for_itself(state, make):
    first = _request(make, "op-a", POINT)
    [_, requested] = _decide_and_take(state, first, make)
    retry = first.model_copy(update={"attempt": 2})

    [_, again] = _decide_and_take(state, retry, make)

    assert isinstance(again, MeasurementRequested)
    assert again.request_id == requested.request_id


def test_a_measurement_started_before_a_restart_is_in_flight_after_it(state, make):
    [_, requested] = _decide_and_take(state, _request(make, "op-a", POINT), make)
    restarted = SamplerState(spaces=state.spaces, pools=state.pools)
    evolve_started(restarted, _started(requested, make))

    decided = decide(restarted, _request(make, "op-b", POINT), make.at)

    assert isinstance(decided[1], Waiting)


def test_a_start_read_after_its_completion_holds_nothing(state, make):
    [_, requested] = _decide_and_take(state, _request(make, "op-a", POINT), make)
    restarted = SamplerState(spaces=state.spaces, pools=state.pools)
    land(restarted, make.completed(POINT, operation="op-a"), make.at)
    evolve_started(restarted, _started(requested, make))

    assert len(restarted.in_flight) == 0


def test_a_waiting_request_handled_twice_is_answered_once(state, make):
    _decide_and_take(state, _request(make, "op-a", POINT), make)
    second = _request(make, "op-b", POINT)
    _decide_and_take(state, second, make)
    _decide_and_take(state, second, make)

    deferred = land(state, make.completed(POINT, operation="op-a"), make.at)

    assert [e.operation_id for e in deferred] == ["op-b"]


def test_a_waiter_whose_operation_ended_is_dropped_unanswered(state, make):
    _decide_and_take(state, _request(make, "op-a", POINT), make)
    second = _request(make, "op-b", POINT)
    _decide_and_take(state, second, make)

    assert end(state, "op-b") == 1
    assert state.in_flight.waiting_for(second.event_id) == 0
    assert land(state, make.completed(POINT, operation="op-a"), make.at) == []


def test_a_request_that_stops_waiting_sends_its_pairs_to_the_pool_and_keeps_the_holder(state, make):
    first = _request(make, "op-a", POINT)
    second = _request(make, "op-b", POINT)
    [_, requested_a] = _decide_and_take(state, first, make)
    _decide_and_take(state, second, make)

    [requested_b] = stop_waiting(state, second.event_id, make.at)
    again = stop_waiting(state, second.event_id, make.at)
    key = (requested_a.sample_store, requested_a.entity_id, requested_a.experiment_id)
    holder = state.in_flight.holder(key)
    deferred = land(state, make.completed(POINT, operation="op-a"), make.at)

    assert isinstance(requested_b, MeasurementRequested)
    assert requested_b.operation_id == "op-b"
    assert requested_b.event_id == caused_event_id(second.event_id, 0, "MeasurementRequested")
    assert holder is not None
    assert holder.request_id == requested_a.request_id
    assert state.in_flight.waiting_for(second.event_id) == 0
    assert again == []
    assert deferred == []


def test_only_the_released_requests_waiters_are_handed_back():
    in_flight = InFlight()
    in_flight.hold(KEY, "r-1")
    in_flight.wait(_waiter("op-b", "r-2"))
    in_flight.wait(_waiter("op-c", "r-3"))

    released = in_flight.release("ev-r-2")

    assert [w.request_id for w in released] == ["r-2"]
    assert in_flight.waiting_for("ev-r-3") == 1
    assert in_flight.holder(KEY) == Holder("r-1")


def test_a_request_read_back_at_start_holds_its_pair_so_a_restarted_sampler_does_not_send_it_again(
    state: SamplerState, make
):
    before = SamplerState()  # the sampler that sent the request, then was killed
    evolve_space(before, make.registered())
    evolve_pools(before, make.pool("a100", "A100"))
    [sent] = _decide_and_take(before, _request(make, "op-a", POINT), make)[1:]
    assert isinstance(sent, MeasurementRequested)

    hold_sent(state, sent)  # the restarted sampler, reading the pool's topic back
    second = _request(make, "op-b", POINT)
    answers = _decide_and_take(state, second, make)

    assert not any(isinstance(answer, MeasurementRequested) for answer in answers)
    assert state.in_flight.waiting_for(second.event_id) == 1


def test_a_request_read_back_after_it_failed_or_landed_holds_nothing(state: SamplerState, make):
    before = SamplerState()
    evolve_space(before, make.registered())
    evolve_pools(before, make.pool("a100", "A100"))
    [sent] = _decide_and_take(before, _request(make, "op-a", POINT), make)[1:]

    fail(state, _failed(sent, make), make.at)  # the failure was folded from the memo's topic
    hold_sent(state, sent)

    assert len(state.in_flight) == 0


def _attempt(make, operation: str, attempt: int) -> SamplesRequested:
    """The explorer's request of `POINT` for `operation`, at `attempt` (a retry after a
    failure keeps the pair's measurement request id)."""
    return make.request(
        make.registered(),
        operation_id=operation,
        points=(POINT,),
        attempt=attempt,
        request_index=attempt - 1,
    )


def _retried(state: SamplerState, make) -> tuple[MeasurementRequested, MeasurementRequested]:
    """op-a's pair sent, failed (retryable), and sent again as attempt 2."""
    [first] = _decide_and_take(state, _attempt(make, "op-a", 1), make)[1:]
    fail(state, _failed(first, make, retryable=True), make.at)
    [second] = _decide_and_take(state, _attempt(make, "op-a", 2), make)[1:]
    assert isinstance(first, MeasurementRequested)
    assert isinstance(second, MeasurementRequested)
    assert (second.request_id, second.attempt) == (first.request_id, 2)
    return first, second


def test_a_retry_read_back_at_start_holds_its_pair_though_its_first_attempt_failed(
    state: SamplerState, make
):
    before = SamplerState()  # sent attempt 1, saw it fail, sent attempt 2, was killed
    evolve_space(before, make.registered())
    evolve_pools(before, make.pool("a100", "A100"))
    first, second = _retried(before, make)

    fail(state, _failed(first, make), make.at)  # the restarted sampler folds the failure
    hold_sent(state, first)  # and reads both attempts back from the pool's topic
    hold_sent(state, second)
    other = _request(make, "op-b", POINT)
    answers = _decide_and_take(state, other, make)

    assert state.in_flight.holder((first.sample_store, first.entity_id, first.experiment_id)) == (
        Holder(first.request_id, 2, "a100")
    )
    assert not any(isinstance(answer, MeasurementRequested) for answer in answers)
    assert state.in_flight.waiting_for(other.event_id) == 1


def test_the_failure_of_an_earlier_attempt_read_late_leaves_the_retry_holding_its_pair(
    state: SamplerState, make
):
    [first] = _decide_and_take(state, _attempt(make, "op-a", 1), make)[1:]
    # the explorer saw attempt 1 fail and retried before this sampler read the failure
    [second] = _decide_and_take(state, _attempt(make, "op-a", 2), make)[1:]
    waiting = _request(make, "op-b", POINT)
    _decide_and_take(state, waiting, make)

    late = fail(state, _failed(first, make, retryable=True), make.at)
    handed_back = fail(state, _failed(second, make, retryable=True), make.at)

    assert late == []
    assert state.in_flight.waiting_for(waiting.event_id) == 0
    assert [(type(a).__name__, a.operation_id) for a in handed_back] == [
        ("MeasurementRequested", "op-b")
    ]


def test_a_request_answered_again_sends_its_pair_to_the_pool_it_was_sent_to(
    state: SamplerState, make
):
    request = _request(make, "op-a", POINT)
    [sent] = _decide_and_take(state, request, make)[1:]
    restarted = SamplerState()
    evolve_space(restarted, make.registered())
    evolve_pools(restarted, make.pool("a100", "A100"))
    evolve_pools(restarted, make.pool("a099", "A100"))  # announced while the request was unread
    hold_sent(restarted, sent)  # read back from the pool's topic

    [again] = _decide_and_take(restarted, request, make)[1:]
    [fresh] = _decide_and_take(restarted, _request(make, "op-b", OTHER), make)[1:]

    assert isinstance(again, MeasurementRequested)
    assert (again.event_id, again.pool, again.topic()) == (sent.event_id, "a100", sent.topic())
    assert isinstance(fresh, MeasurementRequested)
    assert fresh.pool in {"a099", "a100"}  # pairs not sent yet are routed among every pool


def test_a_later_attempt_of_the_holders_request_takes_its_place_and_only_its_failure_frees_it():
    in_flight = InFlight()
    in_flight.hold(KEY, "req-a", 1, "a100")
    in_flight.hold(KEY, "req-a", 2, "a100")
    in_flight.hold(KEY, "req-a", 1, "a100")  # attempt 1 read again: attempt 2 stays
    in_flight.wait(_waiter("op-b", "req-b"))

    assert in_flight.holder(KEY) == Holder("req-a", 2, "a100")
    assert in_flight.fail(KEY, "req-a", 1) is None
    assert in_flight.holder(KEY) == Holder("req-a", 2, "a100")
    freed = in_flight.fail(KEY, "req-a", 2)
    assert freed is not None
    assert freed.request_id == "req-b"
    assert in_flight.holder(KEY) is None


def test_another_requests_send_of_a_held_key_is_its_own_and_holds_the_key_when_the_holder_fails():
    """A pair that waited too long is sent on its own (or both sends are read back at start):
    read again, its request repeated no send and waited, to be answered twice (a reuse beside
    its own measurement); and when the holder failed, the first waiter was sent to a pool while
    that send was in flight, a third measurement of the key."""
    in_flight = InFlight()
    in_flight.hold(KEY, "req-a", 1, "a100")
    in_flight.hold(KEY, "req-b", 1, "h100")  # beside: the key keeps its holder
    in_flight.wait(_waiter("op-c", "req-c"))

    assert in_flight.holder(KEY) == Holder("req-a", 1, "a100")
    assert in_flight.sent(KEY, "req-b") == Holder("req-b", 1, "h100")
    assert in_flight.sent(KEY, "req-c") is None
    assert in_flight.fail(KEY, "req-a", 1) is None  # req-b's send holds it now: req-c waits on
    assert in_flight.holder(KEY) == Holder("req-b", 1, "h100")
    freed = in_flight.fail(KEY, "req-b", 1)
    assert freed is not None
    assert freed.request_id == "req-c"


def test_a_request_read_again_after_its_pair_was_sent_on_its_own_sends_it_again_to_that_pool(
    state, make
):
    """Restarted before the waiting request's offset was committed: its pair, sent on its own
    when the wait ran out, is sent again as the same event to the same pool, and the holder's
    completion does not answer it a second time."""
    holding, waiting = _request(make, "op-a", POINT), _request(make, "op-b", POINT)
    [_, held] = _decide_and_take(state, holding, make)
    take(state, decide(state, waiting, make.at))
    [sent] = stop_waiting(state, waiting.event_id, make.at)

    restarted = SamplerState()
    evolve_space(restarted, make.registered())
    evolve_pools(restarted, make.pool("a100", "A100"))
    evolve_pools(restarted, make.pool("a100-b", "A100"))
    hold_sent(restarted, held)
    hold_sent(restarted, sent)
    again = take(restarted, decide(restarted, waiting, make.at))

    assert [a for a in again if isinstance(a, MeasurementRequested)] == [sent]
    assert land(restarted, make.completed(POINT, operation="op-a"), make.at) == []


def test_a_started_measurement_learns_its_pool_when_its_request_is_read_back():
    in_flight = InFlight()
    in_flight.hold(KEY, "req-a", 1)  # MeasurementStarted: no pool named
    in_flight.hold(KEY, "req-a", 1, "a100")

    assert in_flight.holder(KEY) == Holder("req-a", 1, "a100")


def test_a_requests_failures_are_forgotten_once_it_completes(state, make):
    """Else every failure a sampler ever read stays in memory for good."""
    [_, requested] = _decide_and_take(state, _request(make, "op-a", POINT), make)
    fail(state, _failed(requested, make, retryable=True), make.at)
    assert state.failed_requests == {requested.request_id: 1}

    completed = make.completed(POINT, operation="op-a")
    assert completed.request_id == requested.request_id
    land(state, completed, make.at)
    assert state.failed_requests == {}


def test_how_many_pairs_of_a_request_wait_is_kept_through_every_change():
    """Counted as waiters come and go (every waiting request's task asks it 20 times a
    second: scanning every waiter made that quadratic in the waiters)."""
    in_flight = InFlight()
    other = ("store-a", "e-2", "bench")
    for key in (KEY, other):
        in_flight.hold(key, "req-a")
    for request in ("b", "c"):
        for key in (KEY, other):
            in_flight.wait(replace(_waiter(f"op-{request}", f"req-{request}"), key=key))
    in_flight.wait(_waiter("op-b", "req-b"))  # again: counted once
    assert (in_flight.waiting_for("ev-req-b"), in_flight.waiting_for("ev-req-c")) == (2, 2)

    in_flight.fail(KEY, "req-a")  # hands back req-b's pair of KEY
    assert (in_flight.waiting_for("ev-req-b"), in_flight.waiting_for("ev-req-c")) == (1, 2)
    in_flight.end("op-c")
    assert in_flight.waiting_for("ev-req-c") == 0
    in_flight.land(other)
    assert in_flight.waiting_for("ev-req-b") == 0
    in_flight.wait(replace(_waiter("op-d", "req-d"), key=other))
    in_flight.release("ev-req-d")
    assert in_flight.waiting_for("ev-req-d") == 0


def _fresh(make, *pools: str) -> SamplerState:
    state = SamplerState()
    evolve_space(state, make.registered())
    for pool in pools:
        evolve_pools(state, make.pool(pool, "A100"))
    return state


def test_an_attempt_that_failed_is_not_sent_again_when_its_request_is_read_again(make):
    """A restart before the request's offset was committed reads it again: its attempt 1 had
    failed, and the explorer's attempt 2 is queued. Attempt 1 was routed anew, to a pool
    announced meanwhile whose workers never saw its event id: measured beside attempt 2."""
    before = _fresh(make, "a100")
    first_try = _attempt(make, "op-a", 1)
    [first] = _decide_and_take(before, first_try, make)[1:]
    fail(before, _failed(first, make, retryable=True), make.at)
    [second] = _decide_and_take(before, _attempt(make, "op-a", 2), make)[1:]
    after = _fresh(make, "a100", "a000")  # a pool of the same GPU model came meanwhile
    fail(after, _failed(first, make, retryable=True), make.at)  # folded from measurements
    hold_sent(after, first)
    hold_sent(after, second)

    again = _decide_and_take(after, first_try, make)[1:]

    assert again == []
    assert (
        after.in_flight.holder((first.sample_store, first.entity_id, first.experiment_id)).attempt
        == 2
    )


def test_an_attempt_that_failed_for_good_does_not_hold_the_key_when_read_again(make):
    """Sent again, the stale attempt held the key: another operation's request waited on it,
    and a worker's repeated answer, a duplicate of the failure, never released it."""
    before = _fresh(make, "a100")
    first_try = _attempt(make, "op-a", 1)
    [first] = _decide_and_take(before, first_try, make)[1:]
    after = _fresh(make, "a100")
    fail(after, _failed(first, make, retryable=False), make.at)
    hold_sent(after, first)

    assert _decide_and_take(after, first_try, make)[1:] == []
    other = _decide_and_take(after, _request(make, "op-b", POINT), make)[1:]
    assert [type(answer).__name__ for answer in other] == ["MeasurementRequested"]
