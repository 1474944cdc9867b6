"""Transient failures are retried with backoff; invalid results and lost causes are not."""

from __future__ import annotations

from datetime import timedelta

from discospace.events import (
    MeasurementCompleted,
    MeasurementFailed,
    OperationCompleted,
    SamplesDrawn,
    SamplesRequested,
)
from discospace.explorer.domain.pairs import RetryPolicy


def _failing_first(times: int, retryable: bool = True):
    def behaviour(values, experiment, attempt):
        if attempt <= times:
            return ("fail", retryable)
        return ("valid", {"tps": 1.0, "mem": 1})

    return behaviour


def _single_entity_walk(loop, space, make_request, behaviour, **parameters):
    sim = loop(space, behaviour=behaviour)
    sim.send(make_request(space, number_entities=1, batch_size=1, seed=1, **parameters))
    sim.answer_draws()
    return sim


def test_a_transient_failure_is_retried_after_the_backoff_with_the_next_attempt(
    loop, small_space, make_request, at
):
    sim = _single_entity_walk(loop, small_space, make_request, _failing_first(1))
    failed_entity = sim.measuring[0].entity
    assert sim.measure_next() == []
    assert sim.wake_at == at(1)
    assert sim.tick_at(at(0.5)) == []
    [retry] = sim.tick_at(at(1))
    assert isinstance(retry, SamplesRequested)
    assert retry.points == (failed_entity,)
    assert retry.attempt == 2
    assert [ref.experiment for ref in retry.experiments] == ["bench"]
    assert retry.count is None


def test_a_retried_measurement_that_succeeds_completes_the_operation(
    loop, small_space, make_request
):
    sim = _single_entity_walk(loop, small_space, make_request, _failing_first(2))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.measured == 1
    assert completed.counts.failed == 0
    attempts = [
        e.attempt for e in sim.log if isinstance(e, MeasurementFailed | MeasurementCompleted)
    ]
    assert attempts == [1, 2, 3]


def test_the_backoff_doubles_with_each_attempt_up_to_its_maximum():
    policy = RetryPolicy(max_retries=9, backoff_s=1.5, max_backoff_s=10)
    delays = [policy.delay(attempt).total_seconds() for attempt in range(1, 6)]
    assert delays == [1.5, 3.0, 6.0, 10.0, 10.0]


def test_the_backoff_after_a_thousand_failures_is_its_maximum():
    """2 ** 1024 is no float: the 1025th failure raised OverflowError out of the decision
    round, so the operation never ended and the timer round stopped for every operation."""
    policy = RetryPolicy(max_retries=65_534, backoff_s=5.0, max_backoff_s=300.0)
    assert policy.delay(1025).total_seconds() == 300
    assert policy.delay(65_535).total_seconds() == 300
    assert RetryPolicy(max_retries=65_534, backoff_s=0.0).delay(2000).total_seconds() == 0


def test_retries_wait_longer_after_each_failure(loop, small_space, make_request):
    sim = _single_entity_walk(loop, small_space, make_request, _failing_first(3), max_retries=3)
    waits = []
    for _ in range(3):
        failed_at = sim.now
        sim.measure_next()
        waits.append(sim.wake_at - failed_at)
        sim.tick_at(sim.wake_at)
        sim.answer_draws()
    assert waits == [timedelta(seconds=1), timedelta(seconds=2), timedelta(seconds=4)]


def test_a_measurement_whose_retries_are_spent_fails_for_good_and_the_walk_moves_on(
    loop, small_space, make_request
):
    sim = loop(small_space, behaviour=_failing_first(99))
    sim.send(make_request(small_space, number_entities=2, batch_size=1, max_retries=2, seed=1))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.failed == 2
    assert completed.counts.measured == 0
    failures = [e for e in sim.log if isinstance(e, MeasurementFailed)]
    assert [f.attempt for f in failures] == [1, 2, 3, 1, 2, 3]
    assert completed.stop_reason == "requested_entities_measured"


def test_no_retry_is_asked_for_when_max_retries_is_zero(loop, small_space, make_request):
    sim = _single_entity_walk(loop, small_space, make_request, _failing_first(1), max_retries=0)
    [completed] = sim.measure_next()
    assert isinstance(completed, OperationCompleted)
    assert completed.counts.failed == 1


def test_a_failure_that_cannot_be_retried_is_not_retried(loop, small_space, make_request):
    sim = _single_entity_walk(loop, small_space, make_request, _failing_first(1, retryable=False))
    [completed] = sim.measure_next()
    assert isinstance(completed, OperationCompleted)
    assert completed.counts.failed == 1
    assert sim.wake_at is None


def test_an_entity_the_actuator_reports_invalid_is_never_retried(loop, small_space, make_request):
    def out_of_memory(values, experiment, attempt):
        return ("invalid", "CUDA out of memory")

    sim = loop(small_space, behaviour=out_of_memory)
    sim.send(make_request(small_space, batch_size=2, seed=1))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.invalid == 8
    assert completed.counts.measured == 8
    assert all(r.points is None for r in sim.decisions(SamplesRequested))
    assert completed.best_entity_id is None


def test_with_a_fifth_of_measurements_failing_every_entity_ends_measured_or_failed(
    loop, eighty_space, make_request, flaky_behaviour
):
    sim = loop(eighty_space, behaviour=flaky_behaviour(0.2, seed=4))
    sim.send(make_request(eighty_space, number_entities="all", batch_size=4, max_retries=3))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    counts = completed.counts
    assert counts.measured + counts.failed == 80
    retries = [r for r in sim.decisions(SamplesRequested) if r.attempt > 1]
    assert retries
    assert max(r.attempt for r in retries) <= 4
    assert sim.most_in_flight <= 4


def test_a_point_the_sampler_refuses_on_retry_fails_for_good(loop, small_space, make_request):
    sim = _single_entity_walk(loop, small_space, make_request, _failing_first(1))
    sim.measure_next()
    [retry] = sim.tick_at(sim.wake_at)
    sim.draws.clear()
    refused = SamplesDrawn.caused_by(
        retry,
        sim.now,
        operation_id=retry.operation_id,
        request_index=retry.request_index,
        entity_ids=(),
        next_position=0,
        exhausted=False,
        rejected_points=("batch_size=1: no pool offers bench",),
    )
    [completed] = sim.send(refused)
    assert isinstance(completed, OperationCompleted)
    assert completed.counts.failed == 1
