"""Versioned, idempotent DDL for the store, applied at every start.

`MIGRATIONS` is the ordered history of the schema; adding a table or a column is one new entry at
the end. Never edit an entry that has shipped: `migrate` compares a checksum of each applied
migration's statements and refuses a store whose history differs from the code's.

The statements come from the table declarations in `discospace.store.tables`: a table's
`create_statement()` in the migration that created it, `add_column_statements(version)` in a
later one that adds columns (declared with `added_in=version`), so a shipped CREATE never changes;
a table setting changes by a later `ALTER TABLE ... MODIFY SETTING` (migration 3).

Every statement must be idempotent (`IF NOT EXISTS`, `ADD COLUMN IF NOT EXISTS`...): a start that
crashed half way through a migration, or two services migrating the same server at once, then just
apply it again. `schema_migrations` is a ReplacingMergeTree keyed by version, so a version recorded
twice reads once with `FINAL`.

Engines and keys are chosen to behave the same on chDB and a single ClickHouse server. A table is
ordered by what its reads select on first, so a read touches the granules of its rows and its cost
grows with those rows, not with the store: `events` by operation (`correlation_id`, '' for none)
then `event_id`. Copies of an event share both, so the table still keeps one row per `event_id`.
Tables serving a space's views should likewise start their ORDER BY with the space or sample store.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from discospace.store.errors import MigrationError, reason_of
from discospace.store.tables import (
    COMPACT_PARTS,
    CONSUMER_OFFSETS,
    EVENTS,
    MEASUREMENTS,
    PROJECTION_TABLES,
    RESULTS,
    SCHEMA_MIGRATIONS,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from clickhouse_connect.driver.client import Client

    from discospace.store.schema import Table

logger = logging.getLogger("discospace.store.migrations")


@dataclass(frozen=True)
class Migration:
    """One step of the schema history."""

    version: int
    description: str
    statements: tuple[str, ...]

    @property
    def checksum(self) -> str:
        """A hash of the statements, blind to whitespace, so reformatting is not a change."""
        canonical = "\n;\n".join(" ".join(s.split()) for s in self.statements)
        return hashlib.sha256(canonical.encode()).hexdigest()


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        version=1,
        description="raw events deduplicated by event_id, and consumer offsets",
        statements=(EVENTS.create_statement(), CONSUMER_OFFSETS.create_statement()),
    ),
    Migration(
        version=2,
        description="projection tables: spaces, actuators, operations, measurements, results",
        statements=tuple(table.create_statement() for table in PROJECTION_TABLES),
    ),
    Migration(
        version=3,
        description="measurements and results in compact parts up to 1 GiB",
        statements=tuple(
            f"ALTER TABLE {table.name} MODIFY SETTING {COMPACT_PARTS}"
            for table in (MEASUREMENTS, RESULTS)
        ),
    ),
)


def migrate(client: Client, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Apply the migrations the store lacks, in order; return the versions applied now.

    Every table the store's migrations create must then hold the columns declared for it: a
    table of the same name made by something else (`CREATE TABLE IF NOT EXISTS` leaves it be)
    is refused here with a sentence, where every write would have failed afterwards."""
    from clickhouse_connect.driver.exceptions import Error

    _check_history_order(migrations)
    try:
        client.command(SCHEMA_MIGRATIONS.create_statement())
        _check_columns(client, (SCHEMA_MIGRATIONS,))
        applied = applied_migrations(client)
    except Error as error:
        raise MigrationError(
            f"Cannot read the store's migration history: {reason_of(error)}."
        ) from error
    _check_unchanged(migrations, applied)
    newer = sorted(set(applied) - {m.version for m in migrations})
    if newer:
        logger.warning(
            "the store holds migrations %s, which this code does not know (a newer version "
            "of discospace migrated it): upgrade this service",
            ", ".join(map(str, newer)),
        )
    missing = [m for m in migrations if m.version not in applied]
    tables = (EVENTS, CONSUMER_OFFSETS, *PROJECTION_TABLES)
    if not applied:  # nothing of the store's made yet: a table of its names is another's
        _check_columns(client, tables)  # before any change to it, or any record
    for migration in missing:
        _apply(client, migration)
    _check_columns(client, tables, must_exist=bool(migrations))
    return [m.version for m in missing]


def _check_columns(client: Client, tables: Sequence[Table], must_exist: bool = False) -> None:
    """`MigrationError` naming a table that lacks columns declared for it, or, `must_exist`,
    one that is missing though its migrations are recorded (dropped by hand: every write
    failed afterwards, and was retried for good)."""
    result = client.query(
        "SELECT table, name FROM system.columns WHERE database = currentDatabase()"
        " AND table IN {tables:Array(String)}",
        parameters={"tables": [table.name for table in tables]},
    )
    present: dict[str, set[str]] = {}
    for table, name in result.result_rows:
        present.setdefault(str(table), set()).add(str(name))
    for table in tables:
        if must_exist and table.name not in present:
            raise MigrationError(
                f"The store's table {table.name} is missing, though the migrations that make "
                "it are recorded (was it dropped?): restore it, or give the store a new "
                "database (CLICKHOUSE_URL's path, or DISCOSPACE_STORE_DATABASE)."
            )
        missing = [c for c in table.column_names if c not in present.get(table.name, set())]
        if missing and table.name in present:
            raise MigrationError(
                f"The store's table {table.name} was made by something else: it has no column "
                f"{', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}; give the store "
                "a database of its own (CLICKHOUSE_URL's path, or DISCOSPACE_STORE_DATABASE)."
            )


def applied_migrations(client: Client) -> dict[int, str]:
    """The versions recorded in the store, with the checksum each was applied with."""
    if not client.command("EXISTS TABLE schema_migrations"):
        return {}
    result = client.query(
        "SELECT version, argMax(checksum, applied_at) FROM schema_migrations GROUP BY version"
    )
    return {int(version): str(checksum) for version, checksum in result.result_rows}


def schema_version(client: Client) -> int:
    """The highest migration version applied to the store (0 for a bare store)."""
    return max(applied_migrations(client), default=0)


def _check_history_order(migrations: Sequence[Migration]) -> None:
    versions = [m.version for m in migrations]
    if versions != sorted(set(versions)) or (versions and versions[0] < 1):
        raise MigrationError(
            "Migration versions must be distinct, positive and in increasing order, "
            f"got {versions}."
        )


def _check_unchanged(migrations: Sequence[Migration], applied: dict[int, str]) -> None:
    for migration in migrations:
        recorded = applied.get(migration.version)
        if recorded is not None and recorded != migration.checksum:
            raise MigrationError(
                f"Migration {migration.version} ({migration.description}) differs from the one "
                "applied to this store; add a new migration instead of editing a shipped one."
            )


def _apply(client: Client, migration: Migration) -> None:
    from clickhouse_connect.driver.exceptions import Error

    for statement in migration.statements:
        try:
            client.command(statement)
        except Error as error:
            raise MigrationError(
                f"Migration {migration.version} ({migration.description}) failed: "
                f"{reason_of(error)}."
            ) from error
    applied = SCHEMA_MIGRATIONS.row(
        version=migration.version,
        description=migration.description,
        checksum=migration.checksum,
        applied_at=datetime.now(UTC),
    )
    SCHEMA_MIGRATIONS.insert(client, [applied.ordered()])
