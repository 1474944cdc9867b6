"""Versioned, idempotent DDL: applied once, safe at every start and when two starts race."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from discospace.store.client import StoreSettings, connect
from discospace.store.errors import MigrationError
from discospace.store.migrations import (
    MIGRATIONS,
    Migration,
    applied_migrations,
    migrate,
    schema_version,
)

pytestmark = pytest.mark.integration

_LATEST = MIGRATIONS[-1].version
_EXTRA = Migration(
    version=_LATEST + 1,
    description="a test table",
    statements=("CREATE TABLE IF NOT EXISTS probe (id String) ENGINE = MergeTree ORDER BY id",),
)


def _tables(client) -> set[str]:
    rows = client.query(
        "SELECT name FROM system.tables WHERE database = {database:String}",
        parameters={"database": client.database},
    ).result_rows
    return {name for (name,) in rows}


def test_a_fresh_store_gets_every_migration_and_records_each_version(store_settings) -> None:
    client = connect(store_settings)
    try:
        assert schema_version(client) == 0
        assert migrate(client) == [m.version for m in MIGRATIONS]
        assert applied_migrations(client) == {m.version: m.checksum for m in MIGRATIONS}
        assert {"events", "consumer_offsets", "schema_migrations"} <= _tables(client)
    finally:
        client.close()


def test_migrating_again_applies_nothing_and_keeps_the_same_versions(store_client) -> None:
    before = applied_migrations(store_client)
    assert migrate(store_client) == []
    assert migrate(store_client) == []
    assert applied_migrations(store_client) == before
    assert store_client.command("SELECT count() FROM schema_migrations FINAL") == len(MIGRATIONS)


def test_every_statement_can_run_twice(store_client) -> None:
    for migration in MIGRATIONS:
        for statement in migration.statements:
            store_client.command(statement)
    assert migrate(store_client) == []


def test_a_new_migration_is_one_entry_applied_alone(store_client) -> None:
    assert migrate(store_client, (*MIGRATIONS, _EXTRA)) == [_EXTRA.version]
    assert "probe" in _tables(store_client)
    assert schema_version(store_client) == _EXTRA.version


def test_an_edited_migration_that_was_applied_is_refused(store_client) -> None:
    edited = replace(MIGRATIONS[0], statements=(*MIGRATIONS[0].statements, "SELECT 1"))
    with pytest.raises(MigrationError, match="differs from the one applied to this store"):
        migrate(store_client, (edited, *MIGRATIONS[1:]))


def test_reformatting_a_migration_does_not_count_as_an_edit(store_client) -> None:
    first = MIGRATIONS[0]
    reformatted = replace(first, statements=tuple(" ".join(s.split()) for s in first.statements))
    assert migrate(store_client, (reformatted, *MIGRATIONS[1:])) == []


def test_migrations_out_of_order_are_refused(store_client) -> None:
    with pytest.raises(MigrationError, match="distinct, positive and in increasing order"):
        migrate(store_client, (_EXTRA, *MIGRATIONS))


def test_a_failing_statement_names_its_migration(store_client) -> None:
    broken = replace(_EXTRA, statements=("CREATE TABLE IF NOT EXISTS broken (x NoSuchType)",))
    with pytest.raises(
        MigrationError, match=rf"^Migration {broken.version} \(a test table\) failed"
    ):
        migrate(store_client, (*MIGRATIONS, broken))
    assert broken.version not in applied_migrations(store_client)


def test_two_services_migrating_at_once_end_with_one_schema(
    store_settings: StoreSettings,
) -> None:
    clients = [connect(store_settings) for _ in range(2)]
    errors: list[BaseException] = []

    def start(client) -> None:
        try:
            migrate(client)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=start, args=(client,)) for client in clients]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        assert applied_migrations(clients[0]) == {m.version: m.checksum for m in MIGRATIONS}
        assert clients[0].command("SELECT count() FROM schema_migrations FINAL") == len(MIGRATIONS)
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("foreign", ["events", "schema_migrations"])
def test_a_table_of_the_same_name_made_by_something_else_is_refused_with_a_sentence(
    store_settings, foreign: str
) -> None:
    """CREATE TABLE IF NOT EXISTS left it be and the migration was recorded: every write then
    failed and was retried for good (or, for the history table, a raw ClickHouse error)."""
    client = connect(store_settings)
    try:
        client.command(
            f"CREATE TABLE {foreign} (id UInt64, name String) ENGINE = MergeTree ORDER BY id"
        )
        with pytest.raises(MigrationError, match=rf"^The store's table {foreign} was made by"):
            migrate(client)
    finally:
        client.close()


_RESULTS_DDL = (
    "SELECT create_table_query FROM system.tables"
    " WHERE name = 'results' AND database = currentDatabase()"
)


def test_a_refused_store_records_nothing_and_leaves_the_foreign_table_as_it_was(
    store_settings,
) -> None:
    """Every migration was applied and recorded before the check: the foreign table's settings
    were changed by an ALTER, and once the user moved it away, the next start applied nothing
    and the store lacked the table for good (every write failed, retried for ever)."""
    client = connect(store_settings)
    try:
        client.command("CREATE TABLE results (id UInt64) ENGINE = MergeTree ORDER BY id")
        before = client.command(_RESULTS_DDL)
        with pytest.raises(MigrationError, match=r"^The store's table results was made by"):
            migrate(client)
        assert applied_migrations(client) == {}
        after = client.command(_RESULTS_DDL)
        assert after == before
        client.command("RENAME TABLE results TO theirs")
        assert migrate(client) == [m.version for m in MIGRATIONS]
        assert "results" in _tables(client)
    finally:
        client.close()


def test_a_store_table_dropped_after_its_migration_is_said_at_start(store_client) -> None:
    store_client.command("DROP TABLE results")
    with pytest.raises(MigrationError) as refused:
        migrate(store_client)
    assert str(refused.value).startswith(
        "The store's table results is missing, though the migrations that make it are recorded"
    )


def test_a_store_migrated_by_a_newer_version_is_used_with_a_warning(store_client, caplog) -> None:
    migrate(store_client, (*MIGRATIONS, _EXTRA))

    with caplog.at_level("WARNING", logger="discospace.store.migrations"):
        assert migrate(store_client) == []

    assert f"the store holds migrations {_EXTRA.version}, which this code does not know" in (
        caplog.text
    )
