"""One declaration per table: the DDL it generates, the rows it accepts, the tables it makes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from clickhouse_connect.datatypes.registry import get_from_name

from discospace.store.migrations import MIGRATIONS, Migration, applied_migrations, migrate
from discospace.store.schema import Column, SchemaError, Table
from discospace.store.tables import MEASUREMENTS, OPERATIONS, RESULTS, SCHEMA_MIGRATIONS, TABLES

SHIPPED = Path(__file__).parent / "data" / "shipped_migrations.sql"
"""The statements of the migrations as they shipped (1 and 2 written out by hand before the
declarations existed): stores in use were created by exactly these."""
SHIPPED_CHECKSUMS = {
    1: "d95d3ddd4a98113ab54169a115c607882a6fc3adf2fd817c483c83e7a8604727",
    2: "5f6af595a94383ab56d9eb9344c23b07e2e274dc51befb5f892c6b9d625ecbb1",
    3: "05fd5516f63ca199a745fdfcdedb0df9ae2a50ec21e56c72367d15c394eca3f3",
}
T0 = datetime(2026, 11, 21, tzinfo=UTC)


def _shipped() -> dict[int, tuple[str, ...]]:
    statements: dict[int, list[str]] = {}
    for block in SHIPPED.read_text().split(";"):
        if not block.strip():
            continue
        header, _, statement = block.strip().partition("\n")
        version = int(header.removeprefix("-- migration "))
        statements.setdefault(version, []).append(statement)
    return {version: tuple(found) for version, found in statements.items()}


def _tokens(statement: str) -> list[str]:
    return statement.split()


def _operation(**overrides: object) -> dict[str, object]:
    values: dict[str, object] = {
        "operation_id": "op-1",
        "event_id": "e-1",
        "type": "OperationStarted",
        "occurred_at": T0,
        "space_id": "space-1",
        "payload": "{}",
    }
    return {**values, **overrides}


def test_the_generated_ddl_of_shipped_migrations_is_the_ddl_that_shipped() -> None:
    shipped = _shipped()
    for migration in MIGRATIONS:
        generated = [_tokens(s) for s in migration.statements]
        assert generated == [_tokens(s) for s in shipped[migration.version]]


def test_shipped_migrations_keep_the_checksums_stores_recorded() -> None:
    assert {m.version: m.checksum for m in MIGRATIONS} == SHIPPED_CHECKSUMS


def test_a_row_given_by_column_name_comes_out_in_declared_order() -> None:
    row = OPERATIONS.row(**dict(reversed(_operation().items())))
    assert row.ordered() == ["op-1", "e-1", "OperationStarted", T0, "space-1", "{}"]


def test_a_row_missing_a_column_is_refused_with_its_name() -> None:
    values = _operation()
    del values["space_id"]
    with pytest.raises(SchemaError, match=r"^A row of operations lacks column\(s\) space_id\.$"):
        OPERATIONS.row(**values)


def test_a_row_with_an_unknown_column_is_refused_with_its_name() -> None:
    with pytest.raises(SchemaError, match=r"has unknown column\(s\) spaceid\.$"):
        OPERATIONS.row(**_operation(spaceid="space-1"))


def test_a_misspelt_column_is_reported_as_missing_and_unknown() -> None:
    values = _operation()
    values["operationid"] = values.pop("operation_id")
    with pytest.raises(
        SchemaError, match=r"lacks column\(s\) operation_id and has unknown column\(s\) operationid"
    ):
        OPERATIONS.row(**values)


def test_swapped_values_of_different_kinds_are_refused() -> None:
    values = {
        "sample_store": "store",
        "entity_id": "entity",
        "experiment_id": "finetune",
        "event_id": "e-1",
        "space_id": "space-1",
        "operation_id": "op-1",
        "occurred_at": T0,
        "is_valid": "CUDA out of memory",  # swapped with reason
        "reason": False,
        "values": "{}",
        "entity_values": "{}",
    }
    with pytest.raises(SchemaError, match=r"results\.is_valid \(Bool\) cannot hold str"):
        RESULTS.row(**values)


def test_a_bool_is_not_a_number_and_none_only_fits_a_nullable_column() -> None:
    with pytest.raises(SchemaError, match=r"measurements\.attempt \(UInt16\) cannot hold bool"):
        MEASUREMENTS.column("attempt").check("measurements", True)
    with pytest.raises(SchemaError, match=r"measurements\.retryable \(Bool\) cannot be None"):
        MEASUREMENTS.column("retryable").check("measurements", None)
    MEASUREMENTS.column("is_valid").check("measurements", None)


def test_asking_for_an_undeclared_column_is_refused() -> None:
    with pytest.raises(SchemaError, match="Table results has no column 'kind'"):
        RESULTS.column("kind")


def test_a_table_ordered_by_an_undeclared_column_is_refused() -> None:
    with pytest.raises(SchemaError, match=r"orders by undeclared column\(s\) \['id'\]"):
        Table("probe", columns=(Column("key", "String"),), order_by=("id",))


def test_a_column_added_later_is_left_out_of_the_create_and_added_by_its_migration() -> None:
    probe = Table(
        "probe",
        columns=(Column("key", "String"), Column("note", "String", codec="ZSTD(3)", added_in=3)),
        order_by=("key",),
    )
    assert "note" not in probe.create_statement()
    assert probe.add_column_statements(3) == (
        "ALTER TABLE probe ADD COLUMN IF NOT EXISTS note String CODEC(ZSTD(3))",
    )
    assert probe.add_column_statements(2) == ()
    assert probe.column_names == ("key", "note")


def _described(client, table: Table) -> list[tuple[str, str, str]]:
    rows = client.query(f"DESCRIBE TABLE {table.name}").result_rows
    return [(name, kind, codec) for name, kind, _, _, _, codec, *_ in rows]


def _declared(table: Table) -> list[tuple[str, str, str]]:
    return [(c.name, c.type, c.codec or "") for c in table.columns]


def _layout(client, table: Table) -> tuple[str, str]:
    engine, key = client.query(
        "SELECT engine_full, sorting_key FROM system.tables"
        " WHERE database = currentDatabase() AND name = {name:String}",
        parameters={"name": table.name},
    ).result_rows[0]
    return engine.split(" ORDER BY ")[0], key


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.name)
def test_an_insert_names_each_column_with_a_type_the_client_reads_as_declared(table: Table) -> None:
    sent: dict[str, object] = {}

    class Recorder:
        def insert(self, name: str, rows: object, **names: object) -> None:
            sent.update(names, table=name, rows=rows)

    table.insert(Recorder(), [])  # type: ignore[arg-type]

    assert sent["column_names"] == tuple(column.name for column in table.columns)
    types = sent["column_type_names"]
    assert isinstance(types, tuple)
    assert tuple(get_from_name(name).name for name in types) == tuple(
        column.type for column in table.columns
    )


@pytest.mark.integration
@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.name)
def test_a_migrated_store_has_every_declared_column_with_its_type_and_codec(
    store_client, table: Table
) -> None:
    assert _described(store_client, table) == _declared(table)
    assert _layout(store_client, table) == (table.engine, ", ".join(table.order_by))


@pytest.mark.integration
def test_a_store_created_by_the_shipped_ddl_migrates_to_nothing_and_matches(
    chdb_store_client,
) -> None:
    client = chdb_store_client
    for table in TABLES:
        client.command(f"DROP TABLE {table.name}")
    client.command(SCHEMA_MIGRATIONS.create_statement())
    for version, statements in _shipped().items():
        for statement in statements:
            client.command(statement)
        recorded = Migration(version, "as shipped", statements)
        client.insert(
            SCHEMA_MIGRATIONS.name,
            [[version, recorded.description, recorded.checksum, T0]],
            column_names=SCHEMA_MIGRATIONS.column_names,
        )
    assert migrate(client) == []
    assert applied_migrations(client) == SHIPPED_CHECKSUMS
    for table in TABLES:
        assert _described(client, table) == _declared(table)


def _part_types(client, table: str) -> list[tuple[str, int]]:
    """The format and uncompressed size of `table`'s active parts."""
    return client.query(
        "SELECT part_type, data_uncompressed_bytes FROM system.parts"
        " WHERE active AND database = currentDatabase() AND table = {table:String}",
        parameters={"table": table},
    ).result_rows


def _rows(table: Table, count: int, values: str) -> list[list[object]]:
    """`count` rows of `table` (measurements or results) whose `values` column is `values`."""
    rows = []
    for k in range(count):
        row = {
            "space_id": "space-1",
            "operation_id": "op-1",
            "entity_id": f"entity-{k}",
            "experiment_id": "finetune",
            "event_id": f"e-{k}",
            "kind": "completed",
            "request_id": f"req-{k}",
            "sample_store": "store-1",
            "occurred_at": T0,
            "attempt": 1,
            "is_valid": True,
            "reason": "",
            "retryable": False,
            "values": values,
            "entity_values": "{}",
        }
        row = {name: row[name] for name in table.column_names}
        rows.append(table.row(**row).ordered())
    return rows


@pytest.mark.integration
@pytest.mark.parametrize("table", [MEASUREMENTS, RESULTS], ids=lambda table: table.name)
def test_the_views_tables_keep_compact_parts_past_clickhouses_10_mb(
    chdb_store_client, table: Table
) -> None:
    """Migration 3: an insert of about 16 MB is one compact part; the same rows into a table
    created by the same DDL without it (ClickHouse's default, wide from 10 MB) are not."""
    client = chdb_store_client
    rows = _rows(table, 2000, '{"x":"' + "v" * 8000 + '"}')
    default = f"{table.name}_default_parts"
    client.command(table.create_statement().replace(f"EXISTS {table.name} ", f"EXISTS {default} "))
    for name in (table.name, default):
        client.insert(name, rows, column_names=table.column_names)
    [(kind, size)] = _part_types(client, table.name)
    assert (kind, size > 10_000_000) == ("Compact", True)
    assert [kind for kind, _ in _part_types(client, default)] == ["Wide"]
