"""Knowing when the sampler has read its folded topics up to where they ended at start.

The sampler folds the spaces, actuators and measurements topics with replaying consumers (no
group: every start reads them from the beginning). Answering a request before the memo is
folded could measure again what the store already holds, so the sampler notes the end offset
of every partition of those topics before its consumers start (`end_offsets`) and answers no
request until a broker middleware has seen every one of those partitions read to its end
(`CatchUp.wait`), or until a time limit has passed (then it goes on, and says so in the log).

The middleware sees every message a consumer takes, whatever became of it (folded, ignored,
dropped as a duplicate, dead-lettered), so no message can hold the catch-up back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from faststream import BaseMiddleware
from faststream._internal.context.repository import ContextRepo

from discospace.runtime.replay import existing_partitions

logger = logging.getLogger("discospace.sampler.catchup")

Partition = tuple[str, int]


class CatchUp:
    """How far the replaying consumers have read, against the end offsets noted at start.

    Until `arm` is called there is nothing to wait for (in-memory tests run no startup).
    """

    def __init__(self) -> None:
        self._ends: dict[Partition, int] = {}
        self._read: dict[Partition, int] = {}
        self._ready = asyncio.Event()
        self._ready.set()

    def arm(self, ends: dict[Partition, int]) -> None:
        """Wait for every partition of `ends` to be read up to (not including) its end offset."""
        self._ends = {partition: end for partition, end in ends.items() if end > 0}
        self._update()

    def saw(self, topic: str, partition: int, offset: int) -> None:
        """A consumer took the message at `offset`."""
        key = (topic, partition)
        if offset >= self._read.get(key, 0):
            self._read[key] = offset + 1
        if not self._ready.is_set():
            self._update()

    @property
    def behind(self) -> dict[Partition, int]:
        """Partitions not read to their end yet, with how many messages are left."""
        return {
            key: end - self._read.get(key, 0)
            for key, end in self._ends.items()
            if self._read.get(key, 0) < end
        }

    @property
    def caught_up(self) -> bool:
        return self._ready.is_set()

    def _update(self) -> None:
        if self.behind:
            self._ready.clear()
        else:
            self._ready.set()

    async def wait(self, timeout_s: float) -> bool:
        """True once caught up; False when `timeout_s` passed first (logged once per call)."""
        if self._ready.is_set():
            return True
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            logger.warning(
                "going on before the replay caught up (%d messages left)",
                sum(self.behind.values()),
            )
            return False
        return True

    def middleware(self, msg: Any, /, *, context: ContextRepo) -> BaseMiddleware:
        """The broker middleware factory that reports every consumed message here."""
        return _SeenMiddleware(msg, context=context, catch_up=self)


class _SeenMiddleware(BaseMiddleware):
    def __init__(self, msg: Any, /, *, context: ContextRepo, catch_up: CatchUp) -> None:
        super().__init__(msg, context=context)
        self.catch_up = catch_up

    async def after_processed(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> bool | None:
        if isinstance(self.msg, ConsumerRecord):
            self.catch_up.saw(self.msg.topic, self.msg.partition, self.msg.offset)
        return False


async def end_offsets(bootstrap_servers: str, topics: Iterable[str]) -> dict[Partition, int]:
    """The end offset of every partition of `topics` that holds messages (a missing topic,
    or a partition whose messages all expired, holds none: there is nothing to wait for)."""
    partitions = await existing_partitions(bootstrap_servers, topics)
    if not partitions:
        return {}
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False)
    await consumer.start()
    try:
        begins = await consumer.beginning_offsets(partitions)
        ends = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    return {(tp.topic, tp.partition): end for tp, end in ends.items() if end > begins[tp]}
