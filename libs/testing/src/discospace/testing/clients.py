"""Plain aiokafka clients on the real broker for tests: what any outside producer or reader does.

`EventClient(bootstrap)` publishes events one at a time (`publish`), many in batches
(`publish_batched`) or raw bytes (`produce`), and reads topics from their start:

- `read(topic, count)`: the first `count` records (fails, saying how many came, after a time);
- `read_events(topic, count)`: the same, decoded;
- `read_all(topic)`: every record, until the topic has been quiet for `settle_s`;
- `read_settled(topic, at_least=n)`: every event, at least `n`, then until quiet for `settle_s`;
- `wait_for(topic, found)`: the events from the start, read until `found(events)` holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord

from discospace.events import Event, TopicNames, decode, encode
from discospace.runtime.security import client_kwargs

Records = list[ConsumerRecord[bytes, bytes]]


@dataclass
class EventClient:
    """A producer and readers on one broker, each started and stopped per call."""

    bootstrap: str
    timeout_s: float = 60.0
    """How long a read waits at most, unless the call says otherwise."""

    async def produce(self, topic: str, *values: bytes, key: bytes | None = b"k") -> None:
        """Send raw `values` to `topic` (bytes that may not even be an event)."""
        await self._send([(topic, value, key) for value in values])

    async def publish(self, *events: Event, topics: TopicNames) -> None:
        """Send each event to its topic under its key, in order."""
        await self._send([(e.topic(topics), encode(e), e.key()) for e in events])

    async def publish_batched(self, *events: Event, topics: TopicNames) -> None:
        """`publish` for many events: sent in batches, all acknowledged before it returns."""
        messages = [(e.topic(topics), encode(e), e.key()) for e in events]
        await self._send(messages, linger_ms=20)

    async def read(self, topic: str, count: int, timeout_s: float | None = None) -> Records:
        """The first `count` records of `topic` (fails after the timeout with what it got)."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        records = await self._collect(topic, lambda got, quiet: len(got) >= count, limit)
        assert len(records) >= count, f"{topic}: {len(records)} of {count} records in {limit}s"
        return records[:count]

    async def read_events(
        self, topic: str, count: int, timeout_s: float | None = None
    ) -> list[Event]:
        return [decode(record.value) for record in await self.read(topic, count, timeout_s)]

    async def read_all(self, topic: str, settle_s: float = 2.0) -> Records:
        """Every record `topic` holds, read until `settle_s` passed without a new one."""
        return await self._collect(topic, lambda got, quiet: quiet > settle_s, self.timeout_s)

    async def read_settled(
        self, topic: str, settle_s: float = 2.0, at_least: int = 0
    ) -> list[Event]:
        """Every event `topic` holds: at least `at_least`, then until `settle_s` brings none."""
        records = await self._collect(
            topic, lambda got, quiet: len(got) >= at_least and quiet > settle_s, self.timeout_s
        )
        return [decode(record.value) for record in records]

    async def wait_for(
        self, topic: str, found: Callable[[list[Event]], bool], timeout_s: float | None = None
    ) -> list[Event]:
        """The events of `topic` from the start, read until `found(events)` holds."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        events: list[Event] = []

        def enough(got: Records, quiet: float) -> bool:
            events[len(events) :] = [decode(record.value) for record in got[len(events) :]]
            return found(events)

        records = await self._collect(topic, enough, limit)
        assert enough(records, 0.0), f"{topic}: not found in {len(records)} events in {limit}s"
        return events

    async def _send(
        self, messages: list[tuple[str, bytes, bytes | None]], linger_ms: int | None = None
    ) -> None:
        """One at a time, each acknowledged before the next; or, with `linger_ms`, in batches
        flushed at the end."""
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, linger_ms=linger_ms or 0, **client_kwargs()
        )
        await producer.start()
        try:
            for topic, value, key in messages:
                if linger_ms is None:
                    await producer.send_and_wait(topic, value, key=key)
                else:
                    await producer.send(topic, value, key=key)
            await producer.flush()
        finally:
            await producer.stop()

    async def _collect(
        self, topic: str, enough: Callable[[Records, float], bool], timeout_s: float
    ) -> Records:
        """Records of `topic` from its start until `enough(records, seconds quiet)` holds or
        `timeout_s` passed."""
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=self.bootstrap, auto_offset_reset="earliest", **client_kwargs()
        )
        records: Records = []
        try:
            await consumer.start()
            deadline = time.monotonic() + timeout_s
            quiet_since = time.monotonic()
            while time.monotonic() < deadline:
                if enough(records, time.monotonic() - quiet_since):
                    break
                batch: Any = await consumer.getmany(timeout_ms=200)
                got = [record for part in batch.values() for record in part]
                if got:
                    records += got
                    quiet_since = time.monotonic()
        finally:
            await consumer.stop()
        return records
