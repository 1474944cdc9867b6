"""Writing a batch of read events: projection rows, raw events, then how far it has read.

A projection records how far it has read together with what it wrote, and skips what it has
already seen: an event read at an offset below the recorded one is dropped before anything is
written. ClickHouse has no transaction across tables, so the order is rows, events, offsets: a
crash in between replays the batch, and the tables (deduplicated by event id) absorb it.

The first copy of an event wins, as it does for every other consumer. An event id read again at
a later offset is a copy published again: a producer's retry (the same content), or an answer
given twice, as when a request redelivered after an actuator's crash or a rebalance is measured
again (its events derive their ids from the request's, with their own time and values). The
explorer counted the first copy, so the store keeps it: a copy of an event the store holds, or
one earlier in the same batch, is not written, though its offset counts as read. Otherwise the
later copy would replace the first (the tables keep the last row of a key), and its values and
time (a completion landing after its operation's end is not the operation's) would differ from
what the explorer reported.

Blocking: call it from one worker thread (the store client serialises its calls anyway).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from discospace.events import Event
from discospace.projector.fold import rows_of
from discospace.store.events import (
    EventRecord,
    TopicPartition,
    insert_events,
    next_offsets,
    read_offsets,
    record_offsets,
    stored_event_ids,
)

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

    from discospace.store.schema import Table


@dataclass(frozen=True, slots=True)
class ReadEvent:
    """An event and where it was read from (its raw record)."""

    event: Event
    record: EventRecord


@dataclass(frozen=True, slots=True)
class ReadPast:
    """A record that held no event (set aside on the dead-letter topic): nothing is written,
    but its offset counts as read. Recorded only through the events after it, one at the end
    of a partition was read, and dead-lettered, again at every restart or rebalance."""

    topic: str
    partition: int
    offset: int


Read: TypeAlias = ReadEvent | ReadPast
"""What the projection is handed, in the order it was read."""


class Projection:
    """The projection tables of one consumer, with the offsets it has recorded in the store.

    The offsets are read once from the store and then kept in memory: this consumer is their
    only writer, so a batch costs no read of the store.
    """

    def __init__(self, client: Client, consumer: str) -> None:
        self.client = client
        self.consumer = consumer
        self._next: dict[TopicPartition, int] = read_offsets(client, consumer)

    def next_offset(self, topic: str, partition: int) -> int | None:
        """The next offset to read on a partition; None when nothing was recorded for it."""
        return self._next.get((topic, partition))

    def positions(self) -> dict[TopicPartition, int]:
        """The next offset to read, per topic partition recorded."""
        return dict(self._next)

    def reload(self) -> None:
        """Read the recorded offsets again (after a rebalance gave this consumer partitions)."""
        self._next = read_offsets(self.client, self.consumer)

    def unseen(self, batch: Sequence[Read]) -> list[Read]:
        """The items of `batch` read at or past the recorded offsets."""
        return [item for item in batch if _where(item)[2] >= self._position(*_where(item)[:2])]

    def write(self, batch: Sequence[Read]) -> int:
        """Store what was not read before; return how many events that was (0 for a replay)."""
        return len(self.write_fresh(batch))

    def write_fresh(self, batch: Sequence[Read]) -> list[ReadEvent]:
        """Store what was not read before, one insert per table; return the events written
        (copies of stored events left out, see the module doc)."""
        unseen = self.unseen(batch)
        if not unseen:
            return []
        events = [item for item in unseen if isinstance(item, ReadEvent)]
        fresh = self.first_copies(events) if events else []
        if fresh:
            insert_rows(self.client, [item.event for item in fresh])
            insert_events(self.client, [item.record for item in fresh])
        offsets = next_offsets(item.record for item in events)
        for item in unseen:
            if isinstance(item, ReadPast):
                place = (item.topic, item.partition)
                offsets[place] = max(offsets.get(place, 0), item.offset + 1)
        record_offsets(self.client, self.consumer, offsets)
        self._next.update(offsets)
        return fresh

    def first_copies(self, batch: Sequence[ReadEvent]) -> list[ReadEvent]:
        """The events of `batch` whose id is neither in the store nor earlier in `batch`."""
        stored = stored_event_ids(self.client, (item.record for item in batch))
        first: dict[str, ReadEvent] = {}
        for item in batch:
            if item.record.event_id not in stored:
                first.setdefault(item.record.event_id, item)
        return list(first.values())

    def _position(self, topic: str, partition: int) -> int:
        return self._next.get((topic, partition), 0)


def _where(item: Read) -> tuple[str, int, int]:
    """(topic, partition, offset) an item was read at."""
    place = item.record if isinstance(item, ReadEvent) else item
    return place.topic, place.partition, place.offset


def insert_rows(client: Client, events: Sequence[Event]) -> dict[str, int]:
    """Insert the projection rows of `events`, one insert per table; return rows per table name.

    Each row comes from the fold by column name and goes to the store in its table's declared
    column order.
    """
    by_table: dict[Table, list[list[object]]] = defaultdict(list)
    for event in events:
        for row in rows_of(event):
            by_table[row.table].append(row.ordered())
    for table, rows in by_table.items():
        table.insert(client, rows)
    return {table.name: len(rows) for table, rows in by_table.items()}
