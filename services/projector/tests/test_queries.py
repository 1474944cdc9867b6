"""The projector's reads: every table's rows oldest first, ties broken by event id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from discospace.projector import queries
from discospace.store.client import connect
from discospace.store.migrations import migrate
from discospace.store.tables import OPERATIONS

T0 = datetime(2026, 11, 27, tzinfo=UTC)


def test_rows_come_back_oldest_first_and_by_event_id_at_the_same_instant(
    fresh_store: Any,
) -> None:
    client = connect(fresh_store())
    try:
        migrate(client)
        # Inserted newest first, in two parts, the key order (event id) unlike the time order.
        at = [T0 + timedelta(seconds=s) for s in (5, 1, 3, 3, 0)]
        ids = ["a", "e", "c", "b", "d"]
        rows = [
            OPERATIONS.row(
                operation_id="op",
                event_id=i,
                type="OperationStarted",
                occurred_at=t,
                space_id="s",
                payload="{}",
            ).ordered()
            for i, t in zip(ids, at, strict=True)
        ]
        OPERATIONS.insert(client, rows[:2])
        OPERATIONS.insert(client, rows[2:])

        read = queries.operation_rows(client, "op")

        assert [(row.occurred_at, row.event_id) for row in read] == [
            (T0, "d"),
            (T0 + timedelta(seconds=1), "e"),
            (T0 + timedelta(seconds=3), "b"),
            (T0 + timedelta(seconds=3), "c"),
            (T0 + timedelta(seconds=5), "a"),
        ]
        assert [row.event_id for row in queries.operation_rows(client)] == list("debca")
    finally:
        client.close()
