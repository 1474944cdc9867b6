"""A worker answers a measurement request: started, then completed or failed."""

from __future__ import annotations

import asyncio

import pytest

from discospace.actuator import worker as worker_module
from discospace.actuator.isolation import ChildProcessRunner
from discospace.actuator.plugin import MeasurementTask, Outcome
from discospace.actuator.synthetic import SyntheticActuator, SyntheticParameters
from discospace.actuator.worker import Worker, WorkerMetrics
from discospace.core.measurement import ValidMeasurement
from discospace.events import (
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementStarted,
    encode,
)


def _worker(clock, actuator=None, **parameters) -> Worker:
    actuator = actuator or SyntheticActuator(SyntheticParameters(**parameters))
    return Worker(actuator, "w0", clock, WorkerMetrics.create())


def _sample(worker: Worker, name: str) -> float | None:
    return worker.metrics.registry.get_sample_value(name)


async def _answers(worker, request):
    return [event async for event in worker.handle(request)]


async def test_a_request_is_answered_with_started_then_completed_with_the_values(
    clock, make_request
):
    worker = _worker(clock)
    request = make_request({"batch_size": 8, "model_max_length": 1024})

    started, completed = await _answers(worker, request)

    assert isinstance(started, MeasurementStarted)
    assert isinstance(completed, MeasurementCompleted)
    for event in (started, completed):
        assert (event.request_id, event.entity_id, event.experiment_id) == (
            request.request_id,
            request.entity_id,
            "benchmark",
        )
        assert (event.operation_id, event.sample_store, event.worker_id) == (
            "op-1",
            "store-a",
            "w0",
        )
        assert event.causation_id == request.event_id
    assert completed.is_valid
    assert set(completed.values) == {"throughput", "peak_memory"}
    assert completed.duration_seconds >= 0


async def test_measuring_a_request_again_yields_the_same_event_ids(clock, make_request):
    worker = _worker(clock)
    request = make_request()

    first = await _answers(worker, request)
    again = await _answers(worker, request)

    assert [e.event_id for e in first] == [e.event_id for e in again]
    assert first[1].values == again[1].values


class Counting:
    """The synthetic actuator, counting its measurements; each waits for `gate` when set."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.inner = SyntheticActuator(SyntheticParameters())
        self.name = self.inner.name
        self.gate = gate
        self.calls = 0

    def catalog(self):
        return self.inner.catalog()

    async def measure(self, task: MeasurementTask) -> Outcome:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return await self.inner.measure(task)


async def test_a_request_delivered_again_is_answered_again_without_measuring(clock, make_request):
    """A rebalance that lost the commit of an answered request delivers it again."""
    plugin = Counting()
    worker = _worker(clock, plugin)
    request = make_request()

    first = await _answers(worker, request)
    again = await _answers(worker, request)
    retry = await _answers(worker, make_request(attempt=2))

    assert again == first
    assert plugin.calls == 2  # the request once, then its retry (another request)
    assert [type(e) for e in retry] == [MeasurementStarted, MeasurementCompleted]
    assert _sample(worker, "discospace_measurement_requests_answered_again_total") == 1


async def test_a_result_whose_publish_failed_is_answered_again_without_measuring_again(
    clock, make_request
):
    """The publish of the result failed (the broker away for a moment): the request came
    again and was measured again, the result of a measurement of an hour thrown away."""
    plugin = Counting()
    worker = _worker(clock, plugin)
    request = make_request()

    published = []
    async for event in worker.handle(request):  # the publisher fails on the result
        if isinstance(event, MeasurementCompleted):
            break  # the consumer stops reading its answers: the generator is closed
        published.append(event)
    again = await _answers(worker, request)

    assert plugin.calls == 1
    assert [type(e) for e in again] == [MeasurementStarted, MeasurementCompleted]
    assert again[0] == published[0]


@pytest.mark.parametrize(
    ("field", "problem"),
    [
        ("entity_id", "the request's entity id 'e-other' is not that of its values ('"),
        ("experiment_id", "the request's experiment id 'benchmark' is not that of its "
                          "experiment and parameterization ('benchmark-steps.500')"),
    ],
)  # fmt: skip
async def test_a_request_whose_ids_do_not_name_what_it_asks_to_measure_is_refused(
    clock, make_request, field: str, problem: str
):
    """The result is filed under the request's ids: values of one entity were stored under
    another's id, and a run of 500 steps under the experiment without them."""
    plugin = Counting()
    request = make_request(parameterization={"steps": 500})
    wrong = {"entity_id": "e-other", "experiment_id": "benchmark"}[field]
    request = request.model_copy(update={field: wrong})

    [refused] = await _answers(_worker(clock, plugin), request)

    assert isinstance(refused, MeasurementFailed)
    assert refused.reason.startswith(problem)
    assert refused.retryable is False
    assert plugin.calls == 0


class CancelledInside:
    """A plugin awaiting a future something else cancelled: its own CancelledError."""

    def __init__(self) -> None:
        self.inner = SyntheticActuator(SyntheticParameters())
        self.name = self.inner.name

    def catalog(self):
        return self.inner.catalog()

    async def measure(self, task: MeasurementTask) -> Outcome:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future


async def test_a_plugins_own_cancelled_error_is_a_failure_not_a_stop_of_the_worker(
    clock, make_request
):
    """Let through, it ended the consumer's task as cancelled, which the supervisor never
    restarts: the worker held its partitions and measured nothing."""
    answers = await _answers(_worker(clock, CancelledInside()), make_request())

    assert [type(e) for e in answers] == [MeasurementStarted, MeasurementFailed]
    assert answers[1].reason.startswith("actuator 'synthetic' raised CancelledError")
    assert answers[1].retryable is False


async def test_a_worker_forgets_its_oldest_answers_past_its_memory_bound(
    clock, make_request, monkeypatch
):
    one = sum(len(encode(e)) for e in await _answers(_worker(clock), make_request()))
    monkeypatch.setattr(worker_module, "ANSWERS_KEPT_BYTES", one * 3 // 2)  # one answer's room
    plugin = Counting()
    worker = _worker(clock, plugin)
    first, second = make_request(), make_request()

    for request in (first, second, second, first):
        await _answers(worker, request)

    assert plugin.calls == 3  # the second delivery of `second` answered again; `first` forgotten


async def _measuring(clock, request, gate: asyncio.Event):
    """A worker measuring `request` with a `Counting` plugin held at `gate`, once it measures."""
    plugin = Counting(gate)
    worker = _worker(clock, plugin)
    measuring = asyncio.ensure_future(_answers(worker, request))
    while plugin.calls == 0:
        await asyncio.sleep(0.01)
    return plugin, worker, request, measuring


async def test_a_request_delivered_while_it_is_measured_waits_for_that_measurement(
    clock, make_request
):
    gate = asyncio.Event()
    plugin, worker, request, measuring = await _measuring(clock, make_request(), gate)
    delivered_again = asyncio.ensure_future(_answers(worker, request))
    await asyncio.sleep(0.05)
    gate.set()

    assert await delivered_again == await measuring
    assert plugin.calls == 1


async def test_a_request_whose_measurement_stopped_is_measured_when_delivered_again(
    clock, make_request
):
    gate = asyncio.Event()
    plugin, worker, request, measuring = await _measuring(clock, make_request(), gate)
    measuring.cancel()  # the worker stops mid-measurement: no result, the request uncommitted
    with pytest.raises(asyncio.CancelledError):
        await measuring
    gate.set()
    _, completed = await _answers(worker, request)

    assert isinstance(completed, MeasurementCompleted)
    assert plugin.calls == 2


async def test_an_invalid_result_is_a_completed_measurement_with_its_reason(clock, make_request):
    worker = _worker(clock)

    _, completed = await _answers(
        worker, make_request({"batch_size": 512, "model_max_length": 4096})
    )

    assert isinstance(completed, MeasurementCompleted)
    assert (completed.is_valid, completed.invalid_reason, completed.values) == (
        False,
        "out of memory",
        {},
    )


async def test_a_transient_failure_is_reported_retryable_with_its_attempt(clock, make_request):
    worker = _worker(clock, failure_rate=1.0)

    _, failed = await _answers(worker, make_request(attempt=3))

    assert isinstance(failed, MeasurementFailed)
    assert (failed.retryable, failed.attempt) == (True, 3)
    assert failed.reason == "synthetic transient failure (attempt 3)"


async def test_a_request_for_an_experiment_not_offered_fails_for_now_without_a_call(
    clock, make_request
):
    """A request that waited while its pool stopped offering the experiment (a rolling
    upgrade): it failed for good, where a retry is routed anew, to a pool that offers it."""
    worker = _worker(clock)

    [failed] = await _answers(worker, make_request(experiment="training"))

    assert isinstance(failed, MeasurementFailed)
    assert failed.retryable
    assert failed.reason == (
        "this worker does not offer experiment 'training' of actuator 'synthetic'"
    )
    assert _sample(worker, "discospace_measurement_requests_refused_total") == 1
    assert worker.metrics.calls_with("synthetic", "valid") == 0


async def test_a_parameterization_the_experiment_does_not_have_is_refused(clock, make_request):
    worker = _worker(clock)

    [failed] = await _answers(worker, make_request(parameterization={"epochs": 3}))

    assert isinstance(failed, MeasurementFailed)
    assert "has no optional property 'epochs'" in failed.reason


class _Broken:
    name = "broken"

    def __init__(self, error: BaseException | None = None, delay: float = 0) -> None:
        self.error = error
        self.delay = delay

    def catalog(self):
        return SyntheticActuator().catalog()

    async def measure(self, task: MeasurementTask) -> Outcome:
        await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return ValidMeasurement(values={"throughput": 1.0})


async def test_a_plugin_that_raises_fails_the_measurement_for_good_with_the_error(
    clock, make_request
):
    worker = _worker(clock, actuator=_Broken(RuntimeError("driver crashed")))

    _, failed = await _answers(worker, make_request())

    assert isinstance(failed, MeasurementFailed)
    assert not failed.retryable
    assert failed.reason == "actuator 'broken' raised RuntimeError: driver crashed"
    assert worker.metrics.calls_with("broken", "error") == 1


class _Abort(BaseException):
    """An SDK's own abort (gevent's Timeout, pytest's outcomes): not an Exception."""


@pytest.mark.parametrize("error", [_Abort("vendor SDK aborted"), GeneratorExit()])
async def test_a_plugin_raising_a_base_exception_fails_the_measurement_and_the_worker_goes_on(
    clock, make_request, error: BaseException
):
    """It escaped the worker after `MeasurementStarted`: the request was never answered."""
    worker = _worker(clock, actuator=_Broken(error))

    _, failed = await _answers(worker, make_request())

    assert isinstance(failed, MeasurementFailed)
    assert not failed.retryable
    assert failed.reason.startswith(f"actuator 'broken' raised {type(error).__name__}")


async def test_actuator_calls_are_counted_by_outcome(clock, make_request):
    worker = _worker(clock)
    assert worker.metrics.calls_with("synthetic", "error") == 0
    labels = {"actuator": "synthetic", "outcome": "transient"}
    assert worker.metrics.registry.get_sample_value("discospace_actuator_calls_total", labels) == 0
    for batch in (1, 2, 3):
        await _answers(worker, make_request({"batch_size": batch, "model_max_length": 1024}))
    await _answers(worker, make_request({"batch_size": 1024, "model_max_length": 1024}))

    assert worker.metrics.calls_with("synthetic", "valid") == 3
    assert worker.metrics.calls_with("synthetic", "invalid") == 1
    assert worker.metrics.calls_with("synthetic", "transient") == 0


async def test_a_worker_stopped_mid_measurement_publishes_no_result(clock, make_request):
    worker = _worker(clock, actuator=_Broken(delay=10))
    seen = []

    async def consume():
        async for event in worker.handle(make_request()):
            seen.append(event)

    task = asyncio.create_task(consume())
    while _sample(worker, "discospace_measurements_in_flight") == 0:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert [type(event) for event in seen] == [MeasurementStarted]
    assert _sample(worker, "discospace_measurements_in_flight") == 0


class _Process:
    def __init__(self, started: list[str]) -> None:
        self.started = started

    def start(self) -> None:
        self.started.append("child")

    def join(self) -> None: ...


class _Context:
    """A process context that records the children started instead of starting them."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def Process(self, target, daemon) -> _Process:
        return _Process(self.started)


async def test_a_worker_of_an_isolated_plugin_starts_a_child_before_the_first_request(clock):
    context = _Context()
    actuator = SyntheticActuator(SyntheticParameters())
    isolated = Worker(actuator, "w0", clock, runner=ChildProcessRunner(actuator, context=context))
    in_process = _worker(clock)

    await isolated.warm_up()
    await in_process.warm_up()

    assert context.started == ["child"]
