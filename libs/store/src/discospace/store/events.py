"""The raw event log in the store, and how far each consumer has read.

Writes are idempotent: an event is identified by its `event_id`. A batch drops its own duplicates;
`write_batch` also skips what its consumer has already recorded as read; and the `events` table (a
ReplacingMergeTree ordered by operation then event_id) folds whatever copies still get written, by
a replay or by two writers racing, so every read of it uses `FINAL`: `read_events` and
`count_events` promise one row per event id (a count would otherwise count the copies), and
they read the raw log for replays, imports and tests, never for the views. `write_batch` does not
look up stored ids before it inserts; a projection that must keep the first copy of an event
asks `stored_event_ids` first, a read narrowed by the table's key to the batch's operations.

`consumer_offsets` is read with `FINAL` too, for another reason: its rows of one (consumer,
topic, partition) are not copies but successive versions, and `FINAL` keeps the one with the
latest `updated_at` (the table's version column). It is read once when a projection opens and
after a rebalance, and holds one row per partition once merged, so it costs nothing per event.

A projection writes its events first and its offsets second (ClickHouse has no transaction across
tables): a crash in between replays the batch, which the deduplication absorbs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from discospace.store.tables import CONSUMER_OFFSETS, EVENTS

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

EVENT_COLUMNS = EVENTS.column_names
_SELECT_EVENTS = f"SELECT {', '.join(EVENT_COLUMNS)} FROM {EVENTS.name} FINAL"  # noqa: S608 (declared names)
_ORDER_EVENTS = " ORDER BY occurred_at, topic, partition, offset, event_id"

TopicPartition = tuple[str, int]


class Envelope(Protocol):
    """What the store needs of an event: the envelope of `discospace.events.envelope.Event`."""

    @property
    def event_id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def schema_version(self) -> int: ...
    @property
    def occurred_at(self) -> datetime: ...
    @property
    def correlation_id(self) -> str | None: ...
    @property
    def causation_id(self) -> str | None: ...
    def model_dump_json(self) -> str: ...


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event as stored: its envelope, where it was read from, and its JSON payload.

    `occurred_at` is an aware UTC datetime with millisecond precision once stored. An event of no
    operation is keyed under correlation id '' (a key column cannot be NULL) and reads back None.
    """

    event_id: str
    type: str
    schema_version: int
    occurred_at: datetime
    correlation_id: str | None
    causation_id: str | None
    key: str | None
    topic: str
    partition: int
    offset: int
    payload: str

    @classmethod
    def of(
        cls,
        event: Envelope,
        *,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None = None,
        payload: str | None = None,
    ) -> EventRecord:
        """The record of an event read from Kafka at `topic`/`partition`/`offset`.

        `payload`: the event's JSON as read, when the caller knows it is the event at its
        current version (it then need not be written out again); else the event's own JSON.
        """
        return cls(
            event_id=event.event_id,
            type=event.type,
            schema_version=event.schema_version,
            occurred_at=event.occurred_at,
            correlation_id=event.correlation_id,
            causation_id=event.causation_id,
            key=key.decode("utf-8", errors="replace") if key is not None else None,
            topic=topic,
            partition=partition,
            offset=offset,
            payload=event.model_dump_json() if payload is None else payload,
        )

    def row(self) -> list[object]:
        """The values in `EVENT_COLUMNS` order, with `occurred_at` in UTC."""
        return EVENTS.row(
            event_id=self.event_id,
            type=self.type,
            schema_version=self.schema_version,
            occurred_at=_utc(self.occurred_at),
            correlation_id=self.correlation_id or "",
            causation_id=self.causation_id,
            key=self.key,
            topic=self.topic,
            partition=self.partition,
            offset=self.offset,
            payload=self.payload,
        ).ordered()


def insert_events(client: Client, records: Iterable[EventRecord]) -> int:
    """Store a batch, one row per event id; return how many rows were written."""
    rows = [record.row() for record in _unique_by_id(records).values()]
    if rows:
        EVENTS.insert(client, rows)
    return len(rows)


def stored_event_ids(client: Client, records: Iterable[EventRecord]) -> set[str]:
    """Which of the event ids of `records` the store already holds.

    Asked by (correlation id, event id), the events table's order: the primary index narrows
    the read to the operations of `records`, and the bloom filter on event_id to their granules.
    """
    wanted = {(record.correlation_id or "", record.event_id) for record in records}
    if not wanted:
        return set()
    result = client.query(
        "SELECT DISTINCT event_id FROM events"
        " WHERE correlation_id IN {correlations:Array(String)}"
        " AND event_id IN {ids:Array(String)}",
        parameters={
            "correlations": StringArray(sorted({correlation for correlation, _ in wanted})),
            "ids": StringArray(sorted({event_id for _, event_id in wanted})),
        },
    )
    return {str(row[0]) for row in result.result_rows}


_ESCAPED = str.maketrans({c: "\\" + c for c in ("\\", "'", "`", "\t", "\n")})
"""clickhouse-connect's escapes for a quoted string (`binding.must_escape`), as one table."""


class StringArray:
    """An `Array(String)` query parameter, formatted once by `str.translate`.

    Still a bound parameter (the engine parses it as the declared type), formatted as
    clickhouse-connect formats a list of strings, which it does a character at a time in
    Python: for the 5,000 ids of a large write that took about half of the lookup. The client
    passes an object it does not know through `str()`.
    """

    __slots__ = ("_literal",)

    def __init__(self, values: Iterable[str]) -> None:
        self._literal = "[" + ", ".join(f"'{value.translate(_ESCAPED)}'" for value in values) + "]"

    def __str__(self) -> str:
        return self._literal


def read_events(
    client: Client,
    *,
    types: Iterable[str] | None = None,
    correlation_id: str | None = None,
    limit: int | None = None,
) -> list[EventRecord]:
    """Stored events, oldest first, optionally of some types and of one operation.

    `correlation_id=""` selects the events of no operation; None selects every event.
    """
    conditions: list[str] = []
    parameters: dict[str, object] = {}
    if types is not None:
        conditions.append("type IN {types:Array(String)}")
        parameters["types"] = list(types)
    if correlation_id is not None:
        conditions.append("correlation_id = {correlation_id:String}")
        parameters["correlation_id"] = correlation_id
    sql = _SELECT_EVENTS + _where(conditions) + _ORDER_EVENTS
    if limit is not None:
        sql += " LIMIT {limit:UInt64}"
        parameters["limit"] = limit
    rows = client.query(sql, parameters=parameters).result_rows
    return [_from_row(row) for row in rows]


def count_events(client: Client) -> int:
    """How many distinct events the store holds."""
    return int(client.query("SELECT count() FROM events FINAL").result_rows[0][0])


def record_offsets(client: Client, consumer: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Record, per topic partition, the next offset `consumer` will read (Kafka's convention)."""
    if not offsets:
        return
    now = datetime.now(UTC)
    rows = [
        CONSUMER_OFFSETS.row(
            consumer=consumer, topic=topic, partition=partition, offset=offset, updated_at=now
        ).ordered()
        for (topic, partition), offset in offsets.items()
    ]
    CONSUMER_OFFSETS.insert(client, rows)


def read_offsets(client: Client, consumer: str) -> dict[TopicPartition, int]:
    """The next offset `consumer` will read, per topic partition it has recorded."""
    result = client.query(
        "SELECT topic, partition, offset FROM consumer_offsets FINAL"
        " WHERE consumer = {consumer:String}",
        parameters={"consumer": consumer},
    )
    return {(topic, int(partition)): int(offset) for topic, partition, offset in result.result_rows}


def write_batch(client: Client, consumer: str, records: Sequence[EventRecord]) -> int:
    """Store what `consumer` has not read before, then record how far it has read.

    Returns how many events were written: a redelivered batch writes none.
    """
    read = read_offsets(client, consumer)
    unseen = [r for r in records if r.offset >= read.get((r.topic, r.partition), 0)]
    written = insert_events(client, unseen)
    record_offsets(client, consumer, next_offsets(unseen))
    return written


def next_offsets(records: Iterable[EventRecord]) -> dict[TopicPartition, int]:
    """Per topic partition, one past the highest offset among `records`."""
    offsets: dict[TopicPartition, int] = {}
    for record in records:
        place = (record.topic, record.partition)
        offsets[place] = max(offsets.get(place, 0), record.offset + 1)
    return offsets


def _unique_by_id(records: Iterable[EventRecord]) -> dict[str, EventRecord]:
    unique: dict[str, EventRecord] = {}
    for record in records:
        unique.setdefault(record.event_id, record)
    return unique


def _from_row(row: Sequence[object]) -> EventRecord:
    record = EventRecord(**dict(zip(EVENT_COLUMNS, row, strict=True)))
    if record.correlation_id == "":
        return replace(record, correlation_id=None)
    return record


def _where(conditions: list[str]) -> str:
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


def _utc(moment: datetime) -> datetime:
    """An aware UTC datetime; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
