"""How far a service has read each partition, to wait until it has folded the log up to a point.

A service whose state is a fold of topics sometimes must not act before it has folded
everything a partition held at some moment: the explorer before deciding for the operations of
a partition it was just given (the previous owner's decisions must be folded first). It notes
the end offsets of the partitions at that moment (`end_offsets`) and waits until its consumer
has read each of them up to there (`ReadPositions.wait_until`).

`ReadPositions.saw` is told of every message a consumer of the service is done with
(`Service.done_with`: folded, ignored, dropped as a duplicate, dead-lettered), after its
handler ran, so a position counts only messages already handled: a message handed back to be
delivered again (its handler failed) is not read yet. An event no handler of a consumer takes
is passed over before FastStream's pipeline (`Consumer._passed_over`): register
`ReadPositions.saw` in `Service.passed_over` to count those too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from aiokafka import AIOKafkaConsumer

from discospace.runtime.replay import existing_partitions
from discospace.runtime.security import client_kwargs

Partition = tuple[str, int]
"""(topic, partition)"""


class ReadPositions:
    """The next offset to read of every partition a consumer of the service has read from."""

    def __init__(self) -> None:
        self._read: dict[Partition, int] = {}
        self._moved = asyncio.Event()

    def saw(self, topic: str, partition: int, offset: int) -> None:
        """A consumer handled the message at `offset` (an older offset never moves back)."""
        key = (topic, partition)
        if offset >= self._read.get(key, 0):
            self._read[key] = offset + 1
            moved, self._moved = self._moved, asyncio.Event()
            moved.set()

    def position(self, topic: str, partition: int) -> int:
        """The offset after the last message handled (0: none yet)."""
        return self._read.get((topic, partition), 0)

    def behind(self, ends: Mapping[Partition, int]) -> dict[Partition, int]:
        """Partitions of `ends` not read up to their end yet, with how many messages are left."""
        return {
            key: end - self._read.get(key, 0)
            for key, end in ends.items()
            if self._read.get(key, 0) < end
        }

    async def wait_until(self, ends: Mapping[Partition, int]) -> None:
        """Return once every partition of `ends` is read up to (not including) its end offset."""
        while self.behind(ends):
            await self._moved.wait()


async def end_offsets(bootstrap_servers: str, topics: Iterable[str]) -> dict[Partition, int]:
    """The end offset of every partition of `topics` that holds messages (a missing topic,
    or a partition whose messages all expired, holds none: there is nothing to wait for)."""
    partitions = await existing_partitions(bootstrap_servers, topics)
    if not partitions:
        return {}
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers, enable_auto_commit=False, **client_kwargs()
    )
    try:  # a start that fails is stopped too: its client may hold connections
        await consumer.start()
        begins = await consumer.beginning_offsets(partitions)
        ends = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    return {(tp.topic, tp.partition): end for tp, end in ends.items() if end > begins[tp]}
