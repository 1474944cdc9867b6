"""The projector's port to the store: events in, one at a time, off the event loop.

clickhouse-connect (and chDB) are synchronous, so every store call runs on one worker
thread: the event loop keeps serving /health and the consumers, and store calls never
overlap (chDB hosts one engine per process).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafka import ConsumerRecord

from discospace.events import Event
from discospace.store.client import StoreSettings, connect
from discospace.store.events import EventRecord, write_batch
from discospace.store.migrations import migrate

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

T = TypeVar("T")
logger = logging.getLogger("discospace.projector.store")


class EventStore:
    """The raw event log of the store, written by one consumer (the projector's group)."""

    def __init__(self, settings: StoreSettings, consumer: str) -> None:
        self.settings = settings
        self.consumer = consumer
        self._client: Client | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, function, *args)

    async def open(self) -> None:
        """Connect and apply the store's migrations (idempotent)."""
        self._client = await self._call(connect, self.settings)
        applied = await self._call(migrate, self._client)
        logger.info("store open: %s, %d migrations applied", self.settings.describe(), len(applied))

    async def close(self) -> None:
        if self._client is not None:
            await self._call(self._client.close)
            self._client = None
        self._thread.shutdown(wait=True)

    async def write(self, event: Event, record: ConsumerRecord[Any, Any]) -> int:
        """Store `event` as read at `record`'s position; 0 when it was already stored."""
        if self._client is None:
            raise RuntimeError("The event store is not open.")
        row = EventRecord.of(
            event,
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            key=record.key,
        )
        return await self._call(write_batch, self._client, self.consumer, [row])
