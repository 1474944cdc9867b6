"""Events between Kafka and the store: collected one by one, written in batches, in order.

The consumer hands each fetched batch over and moves on; a writer task writes what has
gathered, up to `max_batch` events at once: as soon as `max_batch` events wait, else `linger_s`
after the first of them arrived. A write costs one insert per table whatever its size (a few
milliseconds each on chDB, and a part for ClickHouse to merge), so a batch of thousands costs
about what one event would; the linger bounds how stale a view may be when events trickle in.

Nothing is lost by handing over before writing: the projector resumes from the offsets the
store recorded with what it wrote (`Projection`), not from Kafka's committed offsets, so an
event that was read but not yet written when the process died is read again. A store that
refuses a batch keeps it buffered and is tried again after `retry_s`; when `capacity` events
wait, the consumer waits too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from discospace.projector.metrics import ProjectorMetrics
from discospace.projector.writing import Read

logger = logging.getLogger("discospace.projector.buffer")
Write = Callable[[Sequence[Read]], Awaitable[int]]


FAILING_AFTER = 3
"""Writes refused in a row before /health says the projector is failing (one refusal is a
blip the retry rides out)."""


class ProjectionBuffer:
    """A FIFO of read events and the one task that writes them (batches never overlap)."""

    def __init__(
        self,
        write: Write,
        metrics: ProjectorMetrics,
        *,
        max_batch: int = 1000,
        linger_s: float = 0.05,
        capacity: int = 20_000,
        retry_s: float = 1.0,
    ) -> None:
        self._write = write
        self.metrics = metrics
        self.max_batch = max_batch
        self.linger_s = linger_s
        self.capacity = capacity
        self.retry_s = retry_s
        self._items: list[Read] = []
        self._lock = asyncio.Lock()
        self._arrived = asyncio.Event()
        self._full = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._task: asyncio.Task[None] | None = None
        self._refused = 0
        """Writes the store refused in a row (0 once one goes through)."""
        self._refusal = ""

    def __len__(self) -> int:
        return len(self._items)

    async def add(self, item: Read) -> None:
        """Queue one event; waits while the buffer is full."""
        await self.add_many((item,))

    async def add_many(self, items: Sequence[Read]) -> None:
        """Queue events in their order; waits while the buffer is full."""
        if not items:
            return
        while len(self._items) >= self.capacity:
            self._room.clear()
            await self._room.wait()
        self._items.extend(items)
        self.metrics.buffered.set(len(self._items))
        self._arrived.set()
        if len(self._items) >= self.max_batch:
            self._full.set()

    async def start(self) -> None:
        """Start the writer task."""
        self._task = asyncio.create_task(self._run(), name="projection-writer")

    async def stop(self) -> None:
        """Stop the writer task, then write what is left (once; a failure is logged)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            await self.flush()
        except Exception:
            logger.exception("%d events not written at shutdown; read again at start", len(self))

    async def flush(self) -> None:
        """Write everything buffered now, in order; raises when the store refuses."""
        while self._items:
            await self._write_next()

    async def _run(self) -> None:
        while True:
            await self._arrived.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._full.wait(), self.linger_s)
            try:
                await self.flush()
            except Exception as error:
                self._refused += 1
                self._refusal = f"{type(error).__name__}: {error}"[:200]
                self.metrics.write_failures.inc()
                logger.exception("the store refused a batch; trying again in %ss", self.retry_s)
                await asyncio.sleep(self.retry_s)
            else:
                self._refused = 0

    def problem(self) -> str | None:
        """Why the views fall behind, for /health: the store refused the last writes (views
        still answer, with what was written before); None while writes go through."""
        if self._refused < FAILING_AFTER:
            return None
        return (
            f"the store refused the last {self._refused} writes ({len(self)} events wait): "
            f"{self._refusal}"
        )

    async def _write_next(self) -> None:
        async with self._lock:
            batch = self._items[: self.max_batch]
            if not batch:
                return
            await self._write(batch)
            del self._items[: len(batch)]
            self.metrics.buffered.set(len(self._items))
            if not self._items:
                self._arrived.clear()
            if len(self._items) < self.max_batch:
                self._full.clear()
            self._room.set()
