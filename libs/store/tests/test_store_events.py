"""The raw event log: idempotent writes, reads by type and operation, and consumer offsets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from discospace.events.codec import decode
from discospace.events.operations import OperationCancelRequested
from discospace.store.events import (
    EVENT_COLUMNS,
    EventRecord,
    StringArray,
    count_events,
    insert_events,
    next_offsets,
    read_events,
    read_offsets,
    record_offsets,
    stored_event_ids,
    write_batch,
)

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
HOSTILE = [
    "op'; DROP TABLE events; --",
    'op" OR 1=1 --',
    "op\\'); DROP DATABASE default; --",
    "op {correlation_id:String}",
    "op\nwith a newline\tand a tab",
    "op-é-漢字-🙂",
]


def _record(
    event_id: str,
    *,
    type: str = "ProbeRecorded",
    correlation_id: str | None = "op-1",
    offset: int = 0,
    partition: int = 0,
    at: datetime = T0,
) -> EventRecord:
    return EventRecord(
        event_id=event_id,
        type=type,
        schema_version=1,
        occurred_at=at,
        correlation_id=correlation_id,
        causation_id=None,
        key=correlation_id,
        topic="operations",
        partition=partition,
        offset=offset,
        payload=f'{{"event_id": "{event_id}"}}',
    )


def test_an_event_reads_back_exactly_as_it_was_written(store_client) -> None:
    event = OperationCancelRequested(
        event_id="e-1",
        occurred_at=T0,
        operation_id="op-1",
        causation_id="c-0",
        requested_by="alice",
        reason="wrong 'store'; sorry",
    )
    record = EventRecord.of(event, topic=event.topic(), partition=3, offset=41, key=event.key())
    assert insert_events(store_client, [record]) == 1
    (stored,) = read_events(store_client)
    assert stored == record
    assert (stored.type, stored.key) == ("OperationCancelRequested", "op-1")
    assert decode(stored.payload) == event


def test_occurred_at_is_stored_in_utc_to_the_millisecond(store_client) -> None:
    paris = timezone(timedelta(hours=1))
    at = datetime(2026, 11, 21, 18, 0, 0, 123456, tzinfo=paris)
    insert_events(store_client, [_record("e-1", at=at)])
    (stored,) = read_events(store_client)
    assert stored.occurred_at == datetime(2026, 11, 21, 17, 0, 0, 123000, tzinfo=UTC)
    assert stored.occurred_at.tzinfo is not None


def test_a_batch_writes_one_row_per_event_id(store_client) -> None:
    assert insert_events(store_client, [_record("e-1"), _record("e-1"), _record("e-2")]) == 2
    assert insert_events(store_client, []) == 0
    assert store_client.command("SELECT count() FROM events") == 2


def test_an_event_written_again_still_reads_once(store_client) -> None:
    insert_events(store_client, [_record("e-1"), _record("e-2")])
    insert_events(store_client, [_record("e-2"), _record("e-3")])
    assert [e.event_id for e in read_events(store_client)] == ["e-1", "e-2", "e-3"]
    assert count_events(store_client) == 3


def test_an_event_of_no_operation_reads_back_without_a_correlation_id(store_client) -> None:
    insert_events(store_client, [_record("e-1", correlation_id=None), _record("e-2")])
    assert [e.correlation_id for e in read_events(store_client)] == [None, "op-1"]


def test_the_table_drops_duplicates_two_writers_both_wrote(store_client) -> None:
    """Two projector replicas racing can both insert an event; FINAL and merges keep one."""
    row = _record("e-1").row()
    for _ in range(2):
        store_client.insert("events", [row], column_names=EVENT_COLUMNS)
    assert store_client.command("SELECT count() FROM events") == 2
    assert count_events(store_client) == 1
    assert len(read_events(store_client)) == 1
    store_client.command("OPTIMIZE TABLE events FINAL")
    assert store_client.command("SELECT count() FROM events") == 1


def test_events_read_back_oldest_first_by_type_and_by_operation(store_client) -> None:
    insert_events(
        store_client,
        [
            _record("e-3", type="B", at=T0 + timedelta(seconds=2)),
            _record("e-1", type="A", at=T0),
            _record("e-2", type="B", correlation_id="op-2", at=T0 + timedelta(seconds=1)),
            _record("e-4", type="C", correlation_id=None, at=T0 + timedelta(seconds=3)),
        ],
    )
    ids = [e.event_id for e in read_events(store_client)]
    assert ids == ["e-1", "e-2", "e-3", "e-4"]
    assert [e.event_id for e in read_events(store_client, types=["B"])] == ["e-2", "e-3"]
    assert [e.event_id for e in read_events(store_client, correlation_id="op-1")] == ["e-1", "e-3"]
    assert [e.event_id for e in read_events(store_client, types=["A", "C"])] == ["e-1", "e-4"]
    assert [e.event_id for e in read_events(store_client, limit=2)] == ["e-1", "e-2"]
    assert read_events(store_client, types=[]) == []


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_strings_are_values_never_sql(store_client, hostile: str) -> None:
    insert_events(store_client, [_record("e-1", correlation_id=hostile), _record("e-2")])
    (found,) = read_events(store_client, correlation_id=hostile)
    assert found.correlation_id == hostile
    assert found.key == hostile
    assert read_events(store_client, types=[hostile]) == []
    record_offsets(store_client, hostile, {(hostile, 0): 7})
    assert read_offsets(store_client, hostile) == {(hostile, 0): 7}
    assert count_events(store_client) == 2


def test_a_string_array_parameter_reads_back_as_the_strings_it_holds(store_client) -> None:
    values = [*HOSTILE, "", "back\\slash\\", "`tick`", "cr\rnul\x00", "'", "\\'"]
    result = store_client.query("SELECT {a:Array(String)}", parameters={"a": StringArray(values)})
    assert result.result_rows[0][0] == values
    assert str(StringArray([])) == "[]"


def test_stored_event_ids_names_exactly_the_ids_the_store_holds(store_client) -> None:
    held = [_record(f"e-{h}", correlation_id=h) for h in HOSTILE] + [_record("e-x", offset=1)]
    insert_events(store_client, held)
    asked = [
        *held,
        _record("e-new"),
        _record("e-new-2", correlation_id=HOSTILE[1]),
    ]
    assert stored_event_ids(store_client, asked) == {r.event_id for r in held}
    assert stored_event_ids(store_client, []) == set()


def test_offsets_round_trip_per_consumer_and_the_latest_wins(store_client) -> None:
    record_offsets(store_client, "projector", {("spaces", 0): 5, ("operations", 1): 10})
    record_offsets(store_client, "projector", {("operations", 1): 12})
    record_offsets(store_client, "other", {("spaces", 0): 99})
    assert read_offsets(store_client, "projector") == {("spaces", 0): 5, ("operations", 1): 12}
    assert read_offsets(store_client, "other") == {("spaces", 0): 99}
    assert read_offsets(store_client, "nobody") == {}


def test_a_batch_records_the_next_offset_to_read_after_its_events(store_client) -> None:
    batch = [
        _record("e-1", offset=7),
        _record("e-2", offset=9),
        _record("e-3", offset=4, partition=1),
    ]
    assert write_batch(store_client, "projector", batch) == 3
    assert read_offsets(store_client, "projector") == {("operations", 0): 10, ("operations", 1): 5}


def test_a_redelivered_batch_writes_only_what_its_consumer_has_not_read(store_client) -> None:
    write_batch(store_client, "projector", [_record("e-1", offset=7), _record("e-2", offset=8)])
    again = [
        _record("e-2", offset=8),
        _record("e-3", offset=9),
        _record("e-4", offset=0, partition=1),
    ]
    assert write_batch(store_client, "projector", again) == 2
    assert write_batch(store_client, "projector", again) == 0
    assert store_client.command("SELECT count() FROM events") == 4
    assert read_offsets(store_client, "projector") == {("operations", 0): 10, ("operations", 1): 1}


def test_another_consumer_writing_the_same_events_still_reads_once(store_client) -> None:
    batch = [_record("e-1", offset=7), _record("e-2", offset=8)]
    assert write_batch(store_client, "projector-a", batch) == 2
    assert write_batch(store_client, "projector-b", batch) == 2
    assert count_events(store_client) == 2


def test_next_offsets_is_one_past_the_highest_offset_per_partition() -> None:
    batch = [_record("a", offset=3), _record("b", offset=1), _record("c", offset=0, partition=2)]
    assert next_offsets(batch) == {("operations", 0): 4, ("operations", 2): 1}
    assert next_offsets([]) == {}
