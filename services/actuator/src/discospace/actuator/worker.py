"""Measuring one request with the actuator plugin: the events to publish, as they happen.

`Worker.handle(request)` yields `MeasurementStarted` before the plugin runs and the result
after it, so the app publishes each as soon as it exists and commits the request's offset only
after the result is out. A worker that stops mid-measurement (cancelled) yields no result: the
request stays uncommitted and another worker of the pool measures it.

A measurement races the worker's timeout and the end of its operation:

- the plugin answers first -> its outcome;
- the timeout passes first -> `MeasurementFailed(retryable)`, "timed out after 30sec";
- the operation ends first (cancelled, completed, failed) -> `MeasurementFailed`, not retried,
  "operation cancelled".

The loser is cancelled: for an isolated plugin, that kills its child process. A request of an
operation that already ended is answered at once, without `MeasurementStarted`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from discospace.actuator.cancellation import EndedOperations
from discospace.actuator.domain import Result, failed, result_of, started, task_of
from discospace.actuator.isolation import ChildProcessRunner, ChildRaisedError, ProcessLost
from discospace.actuator.metrics import OUTCOMES, WorkerMetrics
from discospace.actuator.plugin import (
    Actuator,
    AnyActuator,
    IsolatedActuator,
    MeasurementTask,
    Outcome,
    TransientFailure,
    is_isolated,
)
from discospace.core import ExperimentCatalog, Time
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.events import MeasurementRequested, MeasurementStarted
from discospace.events.factory import Clock

__all__ = ["Failure", "Runner", "Worker", "WorkerMetrics", "runner_for"]

logger = logging.getLogger("discospace.actuator.worker")

Runner = Callable[[MeasurementTask], Awaitable[Outcome]]
"""Runs one measurement: the plugin's `measure`, or its `measure_blocking` in a child process."""


@dataclass(frozen=True)
class Failure:
    """A measurement that gave no outcome of the plugin's own: why, and whether to retry."""

    reason: str
    retryable: bool
    label: str
    """Its outcome in `discospace_actuator_calls_total`."""


def runner_for(actuator: AnyActuator, memory_limit_mb: int | None = None) -> Runner:
    """A child process per measurement for an isolated plugin, else its own `measure`."""
    if is_isolated(actuator):
        return ChildProcessRunner(cast(IsolatedActuator, actuator), memory_limit_mb)
    return cast(Actuator, actuator).measure


def outcome_label(outcome: Outcome | Failure) -> str:
    if isinstance(outcome, Failure):
        return outcome.label
    if isinstance(outcome, ValidMeasurement):
        return "valid"
    if isinstance(outcome, InvalidMeasurement):
        return "invalid"
    return "crashed" if isinstance(outcome, ProcessLost) else "transient"


class Worker:
    """Runs requests through one actuator plugin and says what happened, as events."""

    def __init__(
        self,
        actuator: AnyActuator,
        worker_id: str,
        clock: Clock,
        metrics: WorkerMetrics | None = None,
        timer: Callable[[], float] = time.monotonic,
        *,
        runner: Runner | None = None,
        timeout: Time | None = None,
        operations: EndedOperations | None = None,
    ) -> None:
        self.actuator = actuator
        self.worker_id = worker_id
        self.clock = clock
        self.metrics = metrics or WorkerMetrics.create()
        self.runner = runner or runner_for(actuator)
        self.timeout = timeout
        self.operations = operations or EndedOperations()
        self.catalog = ExperimentCatalog(actuator.catalog())
        self._timer = timer
        for label in OUTCOMES:  # every series listed from the start, at zero
            self.metrics.calls.labels(actuator=actuator.name, outcome=label)
        self.metrics.duration.labels(actuator=actuator.name)

    async def warm_up(self) -> None:
        """Get ready before the first request: an isolated plugin's fork server starts now."""
        if isinstance(self.runner, ChildProcessRunner):
            await self.runner.warm_up()

    async def handle(
        self, request: MeasurementRequested
    ) -> AsyncIterator[MeasurementStarted | Result]:
        """`MeasurementStarted`, then the result; or only a failure when it cannot run."""
        ended = self.operations.reason(request.operation_id)
        if ended is not None:
            self.metrics.skipped.inc()
            yield failed(request, self.worker_id, self.clock(), ended, retryable=False)
            return
        task = task_of(request, self.catalog)
        if isinstance(task, str):
            self.metrics.refused.inc()
            yield failed(request, self.worker_id, self.clock(), task, retryable=False)
            return
        yield started(request, self.worker_id, self.clock())
        outcome, elapsed = await self._measure(task, request.operation_id)
        if isinstance(outcome, Failure):
            now = self.clock()
            yield failed(request, self.worker_id, now, outcome.reason, outcome.retryable)
            return
        yield result_of(request, outcome, self.worker_id, self.clock(), elapsed)

    async def _measure(
        self, task: MeasurementTask, operation_id: str
    ) -> tuple[Outcome | Failure, float]:
        """What measuring gave (or why it gave nothing), and how long it took."""
        name = self.actuator.name
        self.metrics.in_flight.inc()
        begun = self._timer()
        try:
            outcome = await self._race(task, operation_id)
        except Exception as error:
            logger.exception("actuator %s failed on request %s", name, task.request_id)
            outcome = Failure(f"actuator '{name}' raised {_described(error)}", False, "error")
        finally:
            self.metrics.in_flight.dec()
        elapsed = self._timer() - begun
        self.metrics.duration.labels(actuator=name).observe(elapsed)
        self.metrics.calls.labels(actuator=name, outcome=outcome_label(outcome)).inc()
        return outcome, elapsed

    async def _race(self, task: MeasurementTask, operation_id: str) -> Outcome | Failure:
        """The plugin against the timeout and the end of the operation; the loser is stopped."""
        measuring = asyncio.ensure_future(self.runner(task))
        ending = asyncio.ensure_future(self.operations.ended(operation_id))
        try:
            done, _ = await asyncio.wait(
                (measuring, ending), timeout=self._timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            await _stop(measuring, ending)
        if measuring in done:
            return self._checked(measuring.result())
        if ending in done:
            return Failure(ending.result(), retryable=False, label="cancelled")
        return Failure(f"timed out after {self.timeout}", retryable=True, label="timeout")

    @property
    def _timeout_s(self) -> float | None:
        return None if self.timeout is None else float(self.timeout.to("sec").value)

    def _checked(self, outcome: object) -> Outcome | Failure:
        if isinstance(outcome, ValidMeasurement | InvalidMeasurement | TransientFailure):
            return outcome
        reason = (
            f"actuator '{self.actuator.name}' returned {type(outcome).__name__}, not an outcome"
        )
        return Failure(reason, retryable=False, label="error")


async def _stop(*futures: asyncio.Future[object]) -> None:
    """Cancel what has not finished and wait until it has stopped (a child process killed)."""
    for future in futures:
        future.cancel()
    await asyncio.gather(*futures, return_exceptions=True)


def _described(error: Exception) -> str:
    """`RuntimeError: driver crashed`, whether raised here or in a child process."""
    return str(error) if isinstance(error, ChildRaisedError) else f"{type(error).__name__}: {error}"
