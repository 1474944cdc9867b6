"""The projector's message handler: a module-level function over the parts `bootstrap` builds.

The handler takes the event and `ProjectorDeps`; the runtime's `bind` hands FastStream a version
that takes the event alone. So it runs in a test with hand-built parts, no app, no broker.

- `on_event`: every event of every topic (the fixed topics and every pool's measure topic),
  with where it was read from (topic, partition, offset, key), goes to the buffer that writes
  it to the store in batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from aiokafka import ConsumerRecord

from discospace.events import Event
from discospace.projector.adapters import StoreWorker
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.writing import ReadEvent
from discospace.store.events import EventRecord

Record: TypeAlias = ConsumerRecord[bytes, bytes]


@dataclass(frozen=True)
class ProjectorDeps:
    """The projector's parts: the store (views and writes), the buffer between Kafka and the
    store, and the Kafka record of the message being handled."""

    store: StoreWorker
    buffer: ProjectionBuffer
    current_record: Callable[[], Record]


async def on_event(event: Event, deps: ProjectorDeps) -> None:
    record = deps.current_record()
    read = EventRecord.of(
        event,
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key,
    )
    await deps.buffer.add(ReadEvent(event, read))
