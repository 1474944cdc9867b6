"""Measuring one request with the actuator plugin: the events to publish, as they happen.

`Worker.handle(request)` yields `MeasurementStarted` before the plugin runs and the result
after it, so the app publishes each as soon as it exists and commits the request's offset only
after the result is out. A worker that stops mid-measurement (cancelled) yields no result: the
request stays uncommitted and another worker of the pool measures it.

A measurement races the worker's timeout and the end of its operation:

- the plugin answers first -> its outcome, checked (`plugin.checked_outcome`): garbage (a
  wrong type, a target missing, a value that is not finite or an event cannot carry) fails
  for good, "actuator 'x' returned no value for target 'y' ...";
- the timeout passes first -> `MeasurementFailed(retryable)`, "timed out after 30sec";
- the operation ends first, completed by a stopping rule or failed -> `MeasurementFailed`,
  not retried, "operation completed" ("operation failed"). A cancel does not stop a running
  measurement: it finishes, and its result lands in the sample store
  (`cancellation.stops_running`).

The loser is cancelled: for an isolated plugin, that kills its child process; an in-process
plugin that ignores its cancellation is left behind after `stop_grace_s`, so it never holds the
worker. An in-process plugin that holds the event loop (a `time.sleep`, a busy loop) cannot
lose a race, since nothing else runs: the stall guard (`cancellation.StallGuard`) interrupts
it past its timeout ("timed out after 30sec", retried) or once it has held the loop for 5 s
("held the worker's event loop ...", not retried: the plugin must await or be isolated).
Whatever a plugin raises (`SystemExit` too) fails the measurement for good; a `MemoryError`
in the worker's own process is retried ("the worker ran out of memory measuring it"): its
memory is the worker's, shared, so it says nothing sure about the configuration. A result too
large for one message fails for good, saying so. A request of an operation that already ended
(cancelled included) is answered at once, without `MeasurementStarted`: it is skipped.

A request delivered again to the worker that answered it (its offset commit lost to a
rebalance or a crash of the consumer, not of the worker) is answered with the same two events,
not measured again; one delivered while the worker still measures it waits for that
measurement and gets its events. The worker remembers the last `ANSWERS_KEPT` requests it
answered. A request redelivered to another worker of the pool is measured there again: its
answers have the same ids, and every consumer keeps the first copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sys
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import cast

from discospace.actuator.cancellation import STALLS, EndedOperations, Stalled, Watch
from discospace.actuator.domain import Result, failed, result_of, started, task_of
from discospace.actuator.isolation import (
    ChildProcessRunner,
    ChildRaisedError,
    ChildResultError,
    ProcessLost,
)
from discospace.actuator.metrics import OUTCOMES, WorkerMetrics
from discospace.actuator.plugin import (
    Actuator,
    AnyActuator,
    IsolatedActuator,
    MeasurementTask,
    Outcome,
    checked_outcome,
    described,
    is_isolated,
    shortened,
)
from discospace.core import ExperimentCatalog, Time
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.events import (
    MAX_MESSAGE_BYTES,
    EventTooLargeError,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementStarted,
    encode,
    encode_within,
)
from discospace.events.factory import Clock

__all__ = ["Failure", "Runner", "Worker", "WorkerMetrics", "runner_for"]

logger = logging.getLogger("discospace.actuator.worker")

Runner = Callable[[MeasurementTask], Awaitable[Outcome]]
"""Runs one measurement: the plugin's `measure`, or its `measure_blocking` in a child process."""

STOP_GRACE_S = 5.0
"""How long a stopped measurement may take to end before the worker leaves it behind."""
STALL_GRACE_S = 1.0
"""How long past its timeout a measurement that holds the event loop runs before it is
interrupted (a measurement that does not hold it has been stopped by then)."""


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


ANSWERS_KEPT = 4096
"""How many answered requests a worker remembers (their two events), to answer a redelivery."""
ANSWERS_KEPT_BYTES = 32 * 1024 * 1024
"""And how much of them, encoded, at most: the oldest are forgotten first (a result may be up
to a message's limit, 1 MiB by default, so a count alone would not bound the memory)."""


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
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        stop_grace_s: float = STOP_GRACE_S,
    ) -> None:
        self.actuator = actuator
        self.worker_id = worker_id
        self.clock = clock
        self.metrics = metrics or WorkerMetrics.create()
        self.runner = runner or runner_for(actuator)
        self.timeout = timeout
        self.operations = operations or EndedOperations()
        self.max_message_bytes = max_message_bytes
        self.stop_grace_s = stop_grace_s
        self.catalog = ExperimentCatalog(actuator.catalog())
        self._timer = timer
        self._answers: OrderedDict[str, tuple[MeasurementStarted, Result, int]] = OrderedDict()
        self._answers_bytes = 0
        self._running: dict[str, asyncio.Future[tuple[MeasurementStarted, Result] | None]] = {}
        for label in OUTCOMES:  # every series listed from the start, at zero
            self.metrics.calls.labels(actuator=actuator.name, outcome=label)
        self.metrics.duration.labels(actuator=actuator.name)

    async def _answered_before(
        self, request: MeasurementRequested
    ) -> tuple[MeasurementStarted, Result] | None:
        """The events this worker answered `request` with, waiting for them while it measures
        it; None when it never answered it (or its measurement stopped without a result)."""
        kept = self._answers.get(request.event_id)
        if kept is not None:
            return kept[0], kept[1]
        running = self._running.get(request.event_id)
        return None if running is None else await asyncio.shield(running)

    def _remember(
        self, request: MeasurementRequested, answers: tuple[MeasurementStarted, Result]
    ) -> None:
        size = sum(len(encode(event)) for event in answers)
        self._answers[request.event_id] = (*answers, size)
        self._answers_bytes += size
        while len(self._answers) > ANSWERS_KEPT or self._answers_bytes > ANSWERS_KEPT_BYTES:
            *_, forgotten = self._answers.popitem(last=False)[1]
            self._answers_bytes -= forgotten

    async def warm_up(self) -> None:
        """Get ready before the first request: an isolated plugin's fork server starts now."""
        if isinstance(self.runner, ChildProcessRunner):
            await self.runner.warm_up()

    async def handle(
        self, request: MeasurementRequested
    ) -> AsyncIterator[MeasurementStarted | Result]:
        """`MeasurementStarted`, then the result; or only a failure when it cannot run."""
        answered = await self._answered_before(request)
        if answered is not None:
            self.metrics.answered_again.inc()
            for event in answered:
                yield event
            return
        ended = self.operations.reason(request.operation_id)
        if ended is not None:
            self.metrics.skipped.inc()
            yield failed(request, self.worker_id, self.clock(), ended, retryable=False)
            return
        task = task_of(request, self.catalog)
        if isinstance(task, str):
            self.metrics.refused.inc()
            ref = request.experiment
            # not offered here (a catalog that changed while the request waited): another
            # pool may offer it, and a retry is routed anew; anything else fails for good
            elsewhere = self.catalog.get(ref.actuator, ref.experiment) is None
            yield failed(request, self.worker_id, self.clock(), task, retryable=elsewhere)
            return
        running = asyncio.get_running_loop().create_future()
        self._running[request.event_id] = running
        try:
            start = started(request, self.worker_id, self.clock())
            yield start
            outcome, elapsed = await self._measure(task, request.operation_id)
            answer, label = self._answer(request, outcome, elapsed)
            name = self.actuator.name
            self.metrics.duration.labels(actuator=name).observe(elapsed)
            self.metrics.calls.labels(actuator=name, outcome=label).inc()
            # kept before it is published: a publish that fails has the request delivered
            # again, which then answers with it rather than measuring again
            self._remember(request, (start, answer))
            running.set_result((start, answer))
            yield answer
        finally:
            if self._running.get(request.event_id) is running:
                del self._running[request.event_id]
            if not running.done():
                running.set_result(None)

    def too_large(
        self, request: MeasurementRequested, error: EventTooLargeError
    ) -> MeasurementFailed:
        """The failure that replaces a result too large for one message (not retried: the
        plugin would return the same values again)."""
        reason = (
            f"actuator '{self.actuator.name}' returned a result of {error.size} bytes as a "
            f"message, over the {error.limit}-byte message limit"
        )
        return failed(request, self.worker_id, self.clock(), reason, retryable=False)

    def _answer(
        self, request: MeasurementRequested, outcome: Outcome | Failure, elapsed: float
    ) -> tuple[Result, str]:
        """The event that says what measuring gave, and its outcome label."""
        now = self.clock()
        if isinstance(outcome, Failure):
            reason = shortened(outcome.reason)
            return failed(request, self.worker_id, now, reason, outcome.retryable), outcome.label
        result = result_of(request, outcome, self.worker_id, now, elapsed)
        try:
            encode_within(result, self.max_message_bytes)
        except EventTooLargeError as error:
            return self.too_large(request, error), "error"
        return result, outcome_label(outcome)

    async def _measure(
        self, task: MeasurementTask, operation_id: str
    ) -> tuple[Outcome | Failure, float]:
        """What measuring gave (or why it gave nothing), and how long it took."""
        self.metrics.in_flight.inc()
        begun = self._timer()
        try:
            outcome = await self._race(task, operation_id)
        finally:
            self.metrics.in_flight.dec()
        return outcome, self._timer() - begun

    async def _race(self, task: MeasurementTask, operation_id: str) -> Outcome | Failure:
        """The plugin against the timeout and an end of the operation that stops it (not a
        cancel); the loser is stopped."""
        timeout_s = self._timeout_s
        deadline = None if timeout_s is None else time.monotonic() + timeout_s + STALL_GRACE_S
        with self._watched(deadline) as watch:
            measuring = asyncio.ensure_future(self._call(task, watch))
            ending = asyncio.ensure_future(self.operations.ended(operation_id))
            try:
                done, _ = await asyncio.wait(
                    (measuring, ending), timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                await _stop((measuring, ending), self.stop_grace_s, self.actuator.name)
        if measuring in done:
            return self._result(measuring)
        if ending in done:
            return Failure(ending.result(), retryable=False, label="cancelled")
        return self._timed_out()

    async def _call(self, task: MeasurementTask, watch: Watch) -> Outcome | Failure:
        """The plugin's checked outcome, or the failure whatever it raised (SystemExit, any
        BaseException and a stall included) comes to; only a cancellation of this measurement
        and a KeyboardInterrupt pass."""
        watch.frame = sys._getframe()
        name = self.actuator.name
        try:
            outcome: object = self.runner(task)
            if inspect.isawaitable(outcome):
                outcome = await outcome
        except Stalled as stall:
            return self._stalled(stall)
        except MemoryError as error:
            reason = f"the worker ran out of memory measuring it ({described(error)})"
            return Failure(reason, retryable=True, label="transient")
        except ChildResultError as error:
            return Failure(f"actuator '{name}' returned {error}", retryable=False, label="error")
        except KeyboardInterrupt:
            raise  # a stop of the process (a second Ctrl-C), not the plugin's failure
        except BaseException as error:  # an SDK's own BaseException too
            # (a `class Abort(BaseException)`, a GeneratorExit) left the request unanswered
            cancelled = isinstance(error, asyncio.CancelledError)
            current = asyncio.current_task()
            if cancelled and (current is None or current.cancelling()):
                raise  # this measurement is being stopped
            # else a plugin's own CancelledError (a future it awaited was cancelled) too: let
            # through, it ended the consumer's task for good, one the supervisor leaves be
            logger.exception("actuator %s failed on request %s", name, task.request_id)
            reason = f"actuator '{name}' raised {_described(error)}"
            reason += " (not a stop of the worker)" if cancelled else ""
            return Failure(reason, retryable=False, label="error")
        return self._checked(outcome, task)

    def _watched(self, deadline: float | None) -> contextlib.AbstractContextManager[Watch]:
        """The stall guard's watch over an in-process measurement (a child process cannot
        hold the loop, so an isolated one is not watched)."""
        if isinstance(self.runner, ChildProcessRunner):
            return contextlib.nullcontext(Watch(deadline or 0.0))
        return STALLS.watch(deadline)

    def _result(self, measuring: asyncio.Future[Outcome | Failure]) -> Outcome | Failure:
        try:
            return measuring.result()
        except Stalled as stall:  # interrupted outside `_call`'s handlers
            return self._stalled(stall)

    def _stalled(self, stall: Stalled) -> Failure:
        """A measurement interrupted for holding the event loop: past its timeout, or for
        longer than the guard allows whatever its timeout (the plugin's fault)."""
        if stall.timed_out:
            return self._timed_out()
        reason = (
            f"actuator '{self.actuator.name}' held the worker's event loop for over "
            f"{STALLS.block_limit_s:g} s (an in-process plugin must await, not block: make it "
            "isolated)"
        )
        return Failure(reason, retryable=False, label="error")

    def _timed_out(self) -> Failure:
        return Failure(f"timed out after {self.timeout}", retryable=True, label="timeout")

    @property
    def _timeout_s(self) -> float | None:
        return None if self.timeout is None else float(self.timeout.to("sec").value)

    def _checked(self, outcome: object, task: MeasurementTask) -> Outcome | Failure:
        checked = checked_outcome(outcome, task.experiment.experiment)
        if isinstance(checked, str):
            reason = f"actuator '{self.actuator.name}' returned {checked}"
            return Failure(reason, retryable=False, label="error")
        return checked


async def _stop(futures: Iterable[asyncio.Future[object]], grace_s: float, name: str) -> None:
    """Cancel what has not finished and wait until it has stopped (a child process killed),
    for at most `grace_s`: what ignores its cancellation is left behind, logged."""
    pending = {future for future in futures if not future.done()}
    for future in pending:
        future.cancel()
    if not pending:
        return
    _, stuck = await asyncio.wait(pending, timeout=grace_s)
    for future in stuck:
        logger.warning("actuator %s ignored being stopped for %s s: left behind", name, grace_s)
        future.add_done_callback(_retrieved)


def _retrieved(future: asyncio.Future[object]) -> None:
    """Read a left-behind measurement's end, so asyncio does not report it as unretrieved."""
    if not future.cancelled():
        future.exception()


def _described(error: BaseException) -> str:
    """`RuntimeError: driver crashed`, whether raised here or in a child process."""
    return str(error) if isinstance(error, ChildRaisedError) else described(error)
