"""The explorer at run time: one lock, decisions published in order, a timer for what is due.

Every event is folded and decided under one lock, and the decisions are published (in order,
one at a time) before the lock is released. So the log always holds a prefix of the explorer's
decisions: a crash loses at most decisions not yet published, which a restarted explorer
re-decides from the same history with the same ids. A decision is folded into the state as it
is made; if publishing fails it is tried again until it goes through (nothing else can be
decided meanwhile), never dropped while the process lives.

The timer wakes the explorer when a retry's backoff ends or a stopping deadline passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from discospace.events import Event, SpaceRegistered
from discospace.events.common import OperationEvent
from discospace.events.factory import Clock
from discospace.explorer.decide import Decided, Engine
from discospace.explorer.metrics import ExplorerMetrics
from discospace.explorer.operation import Decision
from discospace.explorer.state import ExplorerState, explore, go_live, tick

logger = logging.getLogger("discospace.explorer")

Publish = Callable[[Decision], Awaitable[None]]


class LiveExplorer:
    """Folds events, decides, publishes and keeps the timer; `state` is the folded state."""

    def __init__(
        self,
        engine: Engine,
        publish: Publish,
        clock: Clock,
        metrics: ExplorerMetrics | None = None,
        publish_retry_s: float = 1.0,
    ) -> None:
        self.state = ExplorerState()
        self.engine, self.publish, self.clock, self.metrics = engine, publish, clock, metrics
        self.publish_retry_s = publish_retry_s
        self.wake_at: datetime | None = None
        self._lock = asyncio.Lock()
        self._rescheduled = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None

    def fold(self, event: Event) -> None:
        """Fold an event read while replaying (decides nothing before `go_live`)."""
        if isinstance(event, OperationEvent | SpaceRegistered):
            explore(self.state, event, self.engine, self.clock())
            if self.metrics:
                self.metrics.replayed_events.inc()

    async def handle(self, event: OperationEvent | SpaceRegistered) -> None:
        """Fold a live event and publish the decisions it leads to.

        An event already folded (the explorer's own decisions, read back) is dropped before
        taking the lock: it cannot lead to a decision.
        """
        if self.state.has_folded(event):
            return
        async with self._lock:
            await self._publish(explore(self.state, event, self.engine, self.clock()))

    async def go_live(self) -> None:
        """The history is folded: decide for every operation, then keep the timer."""
        async with self._lock:
            await self._publish(go_live(self.state, self.engine, self.clock()))
        self._timer = asyncio.create_task(self._keep_time(), name="explorer-timer")

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer

    async def _publish(self, decided: Decided) -> None:
        for decision in decided.events:
            await self._publish_one(decision)
        if self.metrics:
            self.metrics.published(decided.events)
            self.metrics.operations_active.set(len(self.state.active()))
        self._schedule(decided.wake_at)

    async def _publish_one(self, decision: Decision) -> None:
        while True:
            try:
                await self.publish(decision)
                return
            except Exception as error:  # the broker's errors vary; retrying is the answer
                logger.warning("publishing %s failed, trying again: %s", decision.type, error)
                await asyncio.sleep(self.publish_retry_s)

    def _schedule(self, at: datetime | None) -> None:
        if at is not None and (self.wake_at is None or at < self.wake_at):
            self.wake_at = at
            self._rescheduled.set()

    async def _keep_time(self) -> None:
        while True:
            self._rescheduled.clear()
            if self.wake_at is None:
                await self._rescheduled.wait()
                continue
            delay = (self.wake_at - self.clock()).total_seconds()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._rescheduled.wait(), timeout=delay)
                continue
            await self._tick()

    async def _tick(self) -> None:
        async with self._lock:
            self.wake_at = None
            await self._publish(tick(self.state, self.engine, self.clock()))
