"""Only the first request of each operation and request index in the log is answered."""

from __future__ import annotations

import asyncio

from discospace.sampler.first import FirstRequests, Verdict


def test_the_first_request_of_an_index_wins_and_a_different_later_one_conflicts(make):
    first = make.request(make.registered(), request_index=3, count=2)
    rival = make.request(make.registered(), request_index=3, count=5)
    requests = FirstRequests()

    assert requests.record(first) is Verdict.FIRST
    assert requests.record(rival) is Verdict.CONFLICT
    assert requests.verdict(first) is Verdict.FIRST
    assert requests.verdict(rival) is Verdict.CONFLICT


def test_the_same_decision_again_is_still_the_first(make):
    first = make.request(make.registered(), request_index=0)
    again = first.model_copy(update={"occurred_at": make.at.replace(year=2030)})
    requests = FirstRequests()
    requests.record(first)

    assert requests.record(again) is Verdict.FIRST


def test_other_indices_and_other_operations_do_not_compete(make):
    space = make.registered()
    requests = FirstRequests()
    requests.record(make.request(space, request_index=0))

    assert requests.record(make.request(space, request_index=1)) is Verdict.FIRST
    assert requests.record(make.request(space, operation_id="op-2")) is Verdict.FIRST
    assert len(requests) == 3


async def test_a_verdict_waits_for_the_request_to_be_read_in_log_order(make):
    first = make.request(make.registered(), count=2)
    rival = make.request(make.registered(), count=5)
    requests = FirstRequests()
    waiting = asyncio.create_task(requests.wait_for(rival, 1.0))
    await asyncio.sleep(0.01)
    assert not waiting.done()

    requests.record(first)

    assert await waiting is Verdict.CONFLICT


async def test_a_request_never_read_in_log_order_counts_as_first_after_the_wait(make):
    request = make.request(make.registered())
    requests = FirstRequests()

    assert await requests.wait_for(request, 0.01) is Verdict.FIRST
    assert requests.verdict(request) is Verdict.FIRST


def test_an_ended_operation_is_forgotten_but_for_its_id_and_its_requests_are_not_answered(make):
    space = make.registered()
    requests = FirstRequests()
    answered = make.request(space, request_index=0)
    requests.record(answered)
    requests.record(make.request(space, request_index=1))
    other = make.request(space, operation_id="op-2")
    requests.record(other)

    requests.end(answered.operation_id)

    assert len(requests) == 1
    assert requests.verdict(answered) is Verdict.ENDED
    assert requests.record(make.request(space, request_index=2)) is Verdict.ENDED
    assert requests.verdict(other) is Verdict.FIRST


async def test_a_request_waiting_for_its_verdict_learns_that_its_operation_ended(make):
    request = make.request(make.registered(), request_index=4)
    requests = FirstRequests()
    waiting = asyncio.create_task(requests.wait_for(request, 1.0))
    await asyncio.sleep(0.01)

    requests.end(request.operation_id)

    assert await waiting is Verdict.ENDED
