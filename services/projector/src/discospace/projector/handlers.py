"""The projector's message handler: a module-level function over the parts `bootstrap` builds.

The handler takes one batch of Kafka records (what one `getmany` returned, in order per
partition) and `ProjectorDeps`, so it runs in a test with hand-built parts, no app, no broker.

- `on_records`: each record is decoded once; an event goes, with where it was read from
  (topic, partition, offset, key), to the buffer that writes it to the store in batches; a
  record that is no readable event is dead-lettered with the reason and the original bytes.

The handler never raises for one record: the subscription commits before handling
(`consuming.py`), so a batch dropped half way would be skipped until the next restart, and
the store's offsets, moved on by the batches after it, would skip it for good. So events read
before an unreadable record are buffered before its dead letter is published, and a dead
letter that cannot be published is tried again until it is (the consumer waits meanwhile).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from aiokafka import ConsumerRecord

from discospace.events import EventDecodeError, decode_verbatim
from discospace.projector.adapters import StoreWorker
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.writing import Read, ReadEvent, ReadPast
from discospace.store.events import EventRecord

Record: TypeAlias = ConsumerRecord[bytes, bytes]
DeadLetter = Callable[[Record, EventDecodeError], Awaitable[None]]
logger = logging.getLogger("discospace.projector.handler")


@dataclass(frozen=True)
class ProjectorDeps:
    """The projector's parts: the store (views and writes), the buffer between Kafka and the
    store, and how an unreadable record is set aside (published to the dead-letter topic)."""

    store: StoreWorker
    buffer: ProjectionBuffer
    dead_letter: DeadLetter
    retry_s: float = 1.0


async def on_records(records: Sequence[Record], deps: ProjectorDeps) -> None:
    """Buffer the events of `records` in order; dead-letter the records that hold none (their
    offsets are recorded as read all the same)."""
    readable: list[Read] = []
    for record in records:
        try:
            readable.append(read_event(record))
        except EventDecodeError as error:
            await deps.buffer.add_many(readable)
            readable = [ReadPast(record.topic, record.partition, record.offset)]
            await _set_aside(record, error, deps)
    await deps.buffer.add_many(readable)


def read_event(record: Record) -> ReadEvent:
    """The event a record holds, with where it was read from; `EventDecodeError` otherwise."""
    value = record.value or b""
    event, verbatim = decode_verbatim(value)
    where = EventRecord.of(
        event,
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key,
        payload=_as_read(value) if verbatim else None,
    )
    return ReadEvent(event, where)


def _as_read(value: bytes) -> str | None:
    """The record's JSON as the stored payload, when it holds the event at its current version
    (nothing was upcast; writing the event out again costs as much as decoding it). None when
    it is no UTF-8: the store writes the event out."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def _set_aside(record: Record, error: EventDecodeError, deps: ProjectorDeps) -> None:
    """Publish the record's dead letter, trying again until the broker takes it."""
    while True:
        try:
            await deps.dead_letter(record, error)
            return
        except Exception as failure:  # the broker is away: the consumer waits for it
            logger.warning(
                "dead letter not published (%s); trying again in %.1f s", failure, deps.retry_s
            )
            await asyncio.sleep(deps.retry_s)


def records_of(batch: Any) -> Sequence[Record]:
    """The records of a FastStream batch body (the decoder in `consuming.py` hands them over
    as they are)."""
    return batch if isinstance(batch, tuple | list) else ()
