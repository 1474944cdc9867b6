"""The projector's port to the store: projection writes and view reads, off the event loop.

clickhouse-connect (and chDB) are synchronous, so every store call runs on one worker thread:
the event loop keeps consuming and serving HTTP, and store calls never overlap (chDB hosts one
engine per process). A view asked for before the store is open answers 503 (`StoreError`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from discospace.projector.metrics import ProjectorMetrics
from discospace.projector.reading import StoreViews
from discospace.projector.writing import Projection, Read, ReadEvent
from discospace.runtime import TransientError
from discospace.store.client import StoreSettings, connect, unreachable_reason
from discospace.store.errors import StoreError, StoreUnreachableError
from discospace.store.events import TopicPartition
from discospace.store.migrations import migrate

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

T = TypeVar("T")


class StoreNotOpenError(StoreError, TransientError):
    """The store is still opening: a message that needs it is tried again, never set aside."""


logger = logging.getLogger("discospace.projector.store")


class StoreWorker:
    """The store of one projector: its projection (writes) and its views (reads)."""

    def __init__(self, settings: StoreSettings, consumer: str, metrics: ProjectorMetrics) -> None:
        self.settings = settings
        self.consumer = consumer
        self.metrics = metrics
        self._client: Client | None = None
        self._projection: Projection | None = None
        self._views: StoreViews | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, function, *args)

    async def open(self) -> None:
        """Connect, apply the store's migrations (idempotent), read the recorded offsets."""
        self._client = client = await self._call(connect, self.settings)
        applied = await self._call(migrate, client)
        self._projection = await self._call(Projection, client, self.consumer)
        self._views = StoreViews(client)
        logger.info("store open: %s, %d migrations applied", self.settings.describe(), len(applied))

    async def close(self) -> None:
        if self._client is not None:
            await self._call(self._client.close)
            self._client = self._projection = self._views = None
        self._thread.shutdown(wait=True)

    async def write(self, batch: Sequence[Read]) -> int:
        """Write what the store has not recorded as read; return how many events that was."""
        projection = self._open(self._projection)
        started = time.perf_counter()
        fresh = await self._call(projection.write_fresh, batch)  # one hop to the store's thread
        self.metrics.write_seconds.observe(time.perf_counter() - started)
        events = sum(1 for item in batch if isinstance(item, ReadEvent))
        self.metrics.skipped.inc(events - len(fresh))
        for event_type, count in Counter(item.event.type for item in fresh).items():
            self.metrics.projected.labels(event_type=event_type).inc(count)
        return len(fresh)

    def positions(self) -> dict[TopicPartition, int]:
        """The next offset to read per topic partition, as this process last knew the store.

        Without waiting: a consumer seeks with these before it fetches anything.
        """
        return self._open(self._projection).positions()

    async def reload_positions(self) -> None:
        """Read the offsets recorded in the store again (another process may have written)."""
        projection = self._open(self._projection)
        await self._call(projection.reload)

    async def read(self, function: Callable[[StoreViews], T]) -> T:
        """`function(views)` on the store's thread: how the HTTP routes read the views. A
        store that stopped answering (a ClickHouse server gone since the projector started)
        is a `StoreUnreachableError`, which the routes answer with 503, not a failed view."""
        from clickhouse_connect.driver.exceptions import OperationalError

        try:
            return await self._call(function, self._open(self._views))
        except OperationalError as error:
            raise StoreUnreachableError(
                f"{self.settings.describe()} does not answer: {unreachable_reason(error)}"
            ) from error

    def _open(self, part: T | None) -> T:
        if part is None:
            raise StoreNotOpenError("The store is not open yet; the projector is still starting.")
        return part
