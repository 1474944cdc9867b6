"""A worker skips the queued work of operations that ended, lets a cancelled operation's
running measurements land, stops those of other ends, and stops a measurement at its timeout."""

from __future__ import annotations

import asyncio
import time

import pytest

from discospace.actuator.cancellation import EndedOperations, end_reason
from discospace.actuator.synthetic import SyntheticActuator, SyntheticParameters
from discospace.actuator.worker import Worker
from discospace.core import Time
from discospace.events import (
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementStarted,
    OperationFailed,
    new_event,
)


def _worker(clock, timeout: str | None = None, **parameters) -> Worker:
    actuator = SyntheticActuator(SyntheticParameters(**parameters))
    return Worker(actuator, "w0", clock, timeout=Time.parse(timeout) if timeout else None)


async def _answers(worker, request):
    return [event async for event in worker.handle(request)]


async def test_a_queued_request_of_a_cancelled_operation_fails_for_good_without_measuring(
    clock, make_request, make_cancel
):
    worker = _worker(clock)
    worker.operations.record(make_cancel("op-1"))

    [failed] = await _answers(worker, make_request(operation="op-1"))

    assert isinstance(failed, MeasurementFailed)
    assert (failed.retryable, failed.reason, failed.worker_id) == (
        False,
        "operation cancelled",
        "w0",
    )
    assert worker.metrics.value("discospace_measurement_requests_skipped_total") == 1
    assert worker.metrics.calls_with("synthetic", "valid") == 0


async def test_a_running_measurement_of_a_cancelled_operation_finishes_and_lands(
    clock, make_request, make_cancel, make_completion
):
    worker = _worker(clock, latency_s=1)
    measuring = asyncio.ensure_future(_answers(worker, make_request(operation="op-2")))
    while worker.metrics.value("discospace_measurements_in_flight") == 0:
        await asyncio.sleep(0.01)
    worker.operations.record(make_cancel("op-2"))
    worker.operations.record(make_completion("op-2", stop_reason="cancelled"))
    started, completed = await asyncio.wait_for(measuring, 5)

    assert isinstance(started, MeasurementStarted)
    assert isinstance(completed, MeasurementCompleted)
    assert completed.is_valid
    assert worker.metrics.calls_with("synthetic", "valid") == 1
    assert worker.metrics.calls_with("synthetic", "cancelled") == 0


async def test_a_request_taken_after_the_cancel_is_skipped_while_a_started_one_finishes(
    clock, make_request, make_cancel
):
    worker = _worker(clock, latency_s=0.5)
    first = make_request({"batch_size": 1}, operation="op-2")
    measuring = asyncio.ensure_future(_answers(worker, first))
    while worker.metrics.value("discospace_measurements_in_flight") == 0:
        await asyncio.sleep(0.01)
    worker.operations.record(make_cancel("op-2"))
    [skipped] = await _answers(worker, make_request({"batch_size": 2}, operation="op-2"))
    _, landed = await asyncio.wait_for(measuring, 5)

    assert isinstance(skipped, MeasurementFailed)
    assert (skipped.retryable, skipped.reason) == (False, "operation cancelled")
    assert isinstance(landed, MeasurementCompleted)
    assert worker.metrics.value("discospace_measurement_requests_skipped_total") == 1


async def test_a_running_measurement_of_an_operation_completed_by_a_stopping_rule_stops_at_once(
    clock, make_request, make_completion
):
    worker = _worker(clock, latency_s=60)
    begun = time.monotonic()

    measuring = asyncio.ensure_future(_answers(worker, make_request(operation="op-2")))
    while worker.metrics.value("discospace_measurements_in_flight") == 0:
        await asyncio.sleep(0.01)
    worker.operations.record(make_completion("op-2", stop_reason="max_duration"))
    started, failed = await asyncio.wait_for(measuring, 5)

    assert isinstance(started, MeasurementStarted)
    assert isinstance(failed, MeasurementFailed)
    assert (failed.retryable, failed.reason) == (False, "operation completed")
    assert time.monotonic() - begun < 5
    assert worker.metrics.calls_with("synthetic", "cancelled") == 1
    assert worker.metrics.value("discospace_measurements_in_flight") == 0


async def test_work_of_a_completed_operation_is_dropped_and_other_operations_go_on(
    clock, make_request, make_completion
):
    worker = _worker(clock)
    worker.operations.record(make_completion("op-done"))

    [dropped] = await _answers(worker, make_request(operation="op-done"))
    _, measured = await _answers(worker, make_request(operation="op-running"))

    assert isinstance(dropped, MeasurementFailed)
    assert (dropped.retryable, dropped.reason) == (False, "operation completed")
    assert isinstance(measured, MeasurementCompleted)
    assert measured.is_valid


def test_an_operation_completed_because_it_was_cancelled_reads_as_cancelled(
    make_completion, make_cancel
):
    assert end_reason(make_completion(stop_reason="cancelled")) == "operation cancelled"
    assert end_reason(make_completion(stop_reason="space_exhausted")) == "operation completed"
    assert end_reason(make_cancel()) == "operation cancelled"


async def test_the_first_end_of_an_operation_is_its_reason_and_wakes_every_waiter(
    clock, make_completion
):
    operations = EndedOperations()
    waiters = [asyncio.ensure_future(operations.ended("op-1")) for _ in range(2)]
    await asyncio.sleep(0)

    operations.record(make_completion("op-1", stop_reason="max_measurements"))
    operations.record(new_event(OperationFailed, clock, operation_id="op-1", reason="broke"))
    operations.record(make_completion("op-2"))

    assert await asyncio.gather(*waiters) == ["operation completed"] * 2
    assert operations.reason("op-1") == "operation completed"
    assert operations.reason("op-2") == "operation completed"
    assert operations.reason("op-3") is None
    assert len(operations) == 2


async def test_a_cancel_skips_the_queue_but_wakes_no_running_measurement(
    make_completion, make_cancel
):
    operations = EndedOperations()
    waiter = asyncio.ensure_future(operations.ended("op-1"))
    await asyncio.sleep(0)

    operations.record(make_cancel("op-1"))
    operations.record(make_completion("op-1", stop_reason="cancelled"))
    await asyncio.sleep(0.05)

    assert operations.reason("op-1") == "operation cancelled"
    assert not waiter.done()
    waiter.cancel()


async def test_a_measurement_past_its_timeout_is_stopped_and_fails_retryably(clock, make_request):
    worker = _worker(clock, timeout="1sec", latency_s=60)
    begun = time.monotonic()

    started, failed = await _answers(worker, make_request(attempt=2))

    assert isinstance(started, MeasurementStarted)
    assert isinstance(failed, MeasurementFailed)
    assert (failed.retryable, failed.reason, failed.attempt) == (
        True,
        "timed out after 1sec",
        2,
    )
    assert 1 <= time.monotonic() - begun < 5
    assert worker.metrics.calls_with("synthetic", "timeout") == 1


async def test_a_measurement_within_its_timeout_completes(clock, make_request):
    worker = _worker(clock, timeout="5sec", latency_s=0.1)

    _, completed = await _answers(worker, make_request())

    assert isinstance(completed, MeasurementCompleted)
    assert completed.is_valid


class _Confused:
    """Returns something that is not an outcome."""

    name = "synthetic"

    def catalog(self):
        return SyntheticActuator().catalog()

    async def measure(self, task):
        return {"throughput": 1.0}


async def test_a_plugin_that_returns_no_outcome_fails_for_good_saying_so(clock, make_request):
    worker = Worker(_Confused(), "w0", clock)

    _, failed = await _answers(worker, make_request())

    assert isinstance(failed, MeasurementFailed)
    assert not failed.retryable
    assert failed.reason == "actuator 'synthetic' returned dict, not an outcome"


@pytest.mark.parametrize("ending", ["cancel", "completion"])
async def test_an_operation_that_ends_while_waiting_wakes_nothing_else(
    ending, make_cancel, make_completion
):
    operations = EndedOperations()
    other = asyncio.ensure_future(operations.ended("op-other"))
    await asyncio.sleep(0)

    operations.record(make_cancel("op-1") if ending == "cancel" else make_completion("op-1"))
    await asyncio.sleep(0.05)

    assert not other.done()
    other.cancel()
