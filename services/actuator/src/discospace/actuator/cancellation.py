"""Stopping measurements: those of operations that ended, and in-process ones that hold the loop.

**Ended operations.** Which operations have ended, so a worker drops their work: a fold of the
operations topic.

An operation ends when someone cancels it (`OperationCancelRequested`), or when the explorer
completes or fails it. Its requests still queued are skipped: each is answered by a
`MeasurementFailed` that is not retried ("operation cancelled", "operation completed",
"operation failed"), without `MeasurementStarted`, so progress accounts for every request.

What happens to its measurements already running depends on the end (`stops_running`):

- a cancel (`OperationCancelRequested`, or `OperationCompleted` with `stop_reason` `cancelled`)
  leaves them to finish: their results land, are recorded in the sample store and answer any
  later request for the same configuration (what `discospace operation cancel` promises); the
  explorer waits for them before it completes the operation, so its counts are final;
- a completion for another reason (a stopping rule: a budget spent, a target reached) or a
  failure stops them (the child process killed): "operation completed", "operation failed".

The worker folds the topic up to its end at every start, before it takes any request (its
follower, `Service.follow`), so a request of an operation that ended before the start is
skipped, never started; an end published later stops the work as soon as it is folded in.

**Measurements that hold the event loop.** An in-process plugin runs on the worker's event
loop; one that blocks it (`time.sleep`, a busy loop, a blocking call) stops everything else:
the timeout, other measurements, Kafka's heartbeats (after about 10 s the group takes the
worker's partitions away). `StallGuard` interrupts it, by a signal to the main thread that
raises `Stalled` in the plugin's own frames:

- past its deadline (its timeout, plus a grace) -> `Stalled(timed_out=True)`: the worker
  reports the timeout, as for any other measurement;
- having held the loop for `block_limit_s` (5 s), whatever its timeout ->
  `Stalled(timed_out=False)`: the plugin breaks its contract (await, or be isolated), and the
  worker fails the measurement for good, saying so.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import TypeAlias

from discospace.events import OperationCancelRequested, OperationCompleted, OperationFailed

OperationEnd: TypeAlias = OperationCancelRequested | OperationCompleted | OperationFailed
"""The events after which an operation's remaining measurements are of no use."""

CANCELLED = "operation cancelled"

STALL_SIGNAL = signal.SIGUSR2
"""What interrupts a measurement that holds the event loop (sent to the main thread)."""
BLOCK_LIMIT_S = 5.0
"""How long an in-process measurement may hold the event loop: well below Kafka's session
timeout (10 s), so the worker keeps its partitions."""
TICK_S = 0.25
"""How often the event loop, when free, says so."""
IDLE_KEEP_S = 5.0
"""How long the guard's thread outlives the last measurement it watched: a worker measuring one
configuration after another reuses it instead of starting a thread per measurement (a watch of
a measurement that returns at once cost 34-55 us of CPU with a thread started per measurement,
15-19 us with one kept: a percent or two of a zero-latency worker's CPU)."""

logger = logging.getLogger("discospace.actuator.cancellation")


def end_reason(event: OperationEnd) -> str:
    """Why the operation's remaining measurements are dropped, as their failure reason."""
    if isinstance(event, OperationCancelRequested):
        return CANCELLED
    if isinstance(event, OperationCompleted):
        return CANCELLED if event.stop_reason == "cancelled" else "operation completed"
    return "operation failed"


def stops_running(event: OperationEnd) -> bool:
    """Whether this end stops the operation's running measurements: every end but a cancel,
    whose measurements in flight still land (module doc)."""
    return end_reason(event) != CANCELLED


class EndedOperations:
    """The operations that ended (the first reason wins), and the measurements waiting for one
    to end in a way that stops them (`stops_running`)."""

    def __init__(self) -> None:
        self._ended: dict[str, str] = {}
        self._stopped: dict[str, str] = {}
        self._waiting: dict[str, set[asyncio.Future[str]]] = defaultdict(set)

    def __len__(self) -> int:
        return len(self._ended)

    def reason(self, operation_id: str) -> str | None:
        """Why the operation ended, or None while it runs."""
        return self._ended.get(operation_id)

    def record(self, event: OperationEnd) -> None:
        """Fold an end in; one that stops running measurements wakes those of the operation."""
        operation_id = event.operation_id
        self._ended.setdefault(operation_id, end_reason(event))
        if operation_id in self._stopped or not stops_running(event):
            return
        reason = self._stopped[operation_id] = end_reason(event)
        for waiter in self._waiting.pop(operation_id, set()):
            if not waiter.done():
                waiter.set_result(reason)

    async def ended(self, operation_id: str) -> str:
        """Return (with the reason) once the operation has ended in a way that stops its
        running measurements (never, for a cancel)."""
        known = self._stopped.get(operation_id)
        if known is not None:
            return known
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[operation_id].add(waiter)
        try:
            return await waiter
        finally:
            waiters = self._waiting.get(operation_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiting[operation_id]


class Stalled(BaseException):
    """Raised into a measurement that holds the event loop: past its deadline (`timed_out`),
    or for longer than the guard's block limit. A BaseException, so a plugin's
    `except Exception` does not swallow it."""

    def __init__(self, timed_out: bool) -> None:
        super().__init__("timed out" if timed_out else "held the event loop")
        self.timed_out = timed_out


@dataclass(eq=False)
class Watch:
    """One measurement watched: when it is overdue, and the frame it runs under (set by the
    measurement itself, once it runs)."""

    deadline: float
    frame: FrameType | None = None


class StallGuard:
    """Interrupts an in-process measurement that holds the event loop (module docstring).

    While measurements are watched, the loop ticks every `TICK_S`, and a thread waits for the
    earliest deadline or for the ticks to stop for `block_limit_s`; then it signals the main
    thread (where the loop runs) every second; it ends once nothing was watched for
    `idle_keep_s`. The handler raises `Stalled` only when a watched measurement's frame is on
    the interrupted stack, i.e. the plugin itself is running: anywhere else (the loop idle,
    Kafka's client) the signal does nothing. One per process, as signal handlers are; a loop
    outside the main thread, or the signal taken by someone else, goes unguarded. Code that
    never returns to the interpreter (a C loop) cannot be interrupted: such a plugin must be
    isolated.
    """

    def __init__(
        self,
        block_limit_s: float = BLOCK_LIMIT_S,
        resignal_s: float = 1.0,
        idle_keep_s: float = IDLE_KEEP_S,
    ) -> None:
        self.block_limit_s = block_limit_s
        self.resignal_s = resignal_s
        self.idle_keep_s = idle_keep_s
        self._watches: set[Watch] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._ticking: asyncio.AbstractEventLoop | None = None
        self._ticked = time.monotonic()

    @contextmanager
    def watch(self, deadline: float | None) -> Iterator[Watch]:
        """Watch the measurement run inside (it sets `frame`), due by `deadline` (monotonic);
        call it on the event loop."""
        watch = Watch(math.inf if deadline is None else deadline)
        if not self._installed():
            yield watch
            return
        self._tick_on(asyncio.get_running_loop())
        with self._changed:
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="stall-guard", daemon=True)
                self._thread.start()
            self._changed.notify()
        try:
            yield watch
        finally:
            with self._changed:
                self._watches.discard(watch)
                self._changed.notify()

    def _installed(self) -> bool:
        """Whether the handler is in place, installing it from the main thread if need be."""
        current = signal.getsignal(STALL_SIGNAL)
        if current == self._interrupt:
            return True
        if threading.current_thread() is not threading.main_thread():
            return False
        if current not in (signal.SIG_DFL, None):
            logger.warning("%s is taken: plugins holding the loop go on", STALL_SIGNAL.name)
            return False
        signal.signal(STALL_SIGNAL, self._interrupt)
        return True

    def _tick_on(self, loop: asyncio.AbstractEventLoop) -> None:
        self._ticked = time.monotonic()
        if self._ticking is not loop:
            self._ticking = loop
            loop.call_later(TICK_S, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop is free: note it, and again in `TICK_S` while measurements are watched."""
        self._ticked = time.monotonic()
        if self._watches and self._ticking is loop:
            loop.call_later(TICK_S, self._tick, loop)
        elif self._ticking is loop:
            self._ticking = None

    @property
    def watching(self) -> bool:
        """Whether the guard's thread is running (it ends `idle_keep_s` after the last watch)."""
        return self._thread is not None

    def _run(self) -> None:
        """The watching thread: signal the main thread while a measurement is due; end once
        nothing was watched for `idle_keep_s`."""
        main = threading.main_thread().ident
        with self._changed:
            idle_since: float | None = None
            while True:
                if not self._watches:
                    now = time.monotonic()
                    idle_since = now if idle_since is None else idle_since
                    left = idle_since + self.idle_keep_s - now
                    if left <= 0:
                        self._thread = None
                        return
                    self._changed.wait(left)
                    continue
                idle_since = None
                due = min(min(w.deadline for w in self._watches), self._ticked + self.block_limit_s)
                wait = due - time.monotonic()
                if wait <= 0 and main is not None:
                    signal.pthread_kill(main, STALL_SIGNAL)
                    wait = self.resignal_s
                self._changed.wait(wait)

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler, in the main thread: raise in a watched measurement that holds
        the loop, if one is running; else do nothing."""
        now = time.monotonic()
        running = {id(w.frame): w for w in list(self._watches) if w.frame is not None}
        while frame is not None:
            watch = running.get(id(frame))
            if watch is not None:
                if watch.deadline <= now:
                    raise Stalled(timed_out=True)
                if now - self._ticked > self.block_limit_s:
                    raise Stalled(timed_out=False)
                return
            frame = frame.f_back


STALLS = StallGuard()
"""The process's guard (a signal handler is per process)."""
