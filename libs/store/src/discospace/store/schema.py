"""How a store table is declared once, and what comes from that one declaration.

- `Column`: a name, its ClickHouse type and codec, and the migration that added it when that is
  not the one that created its table.
- `Table`: the columns in order, the engine, the ORDER BY, skipping indexes and settings.
  `create_statement()` is its DDL (the columns it was created with), `add_column_statements(v)`
  the DDL of migration `v` for the columns `v` added, `column_names` the column order of inserts
  and selects, and `row(**values)` one row given by column name.
- `Row`: one row of one table, checked when it is built: a missing or unknown column, or a value
  of the wrong kind for its column (a string in a `Bool` column), raises `SchemaError` at once,
  naming the table and the column.

Identifiers in the generated SQL come from these fixed declarations only; user values never do.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from discospace.store.errors import StoreError

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

_WRAPPER = re.compile(r"^(?:Nullable|LowCardinality)\((.*)\)$")
_INDENT = "\n    "


class SchemaError(StoreError, ValueError):
    """A row does not fit its table's declaration (missing, unknown or mistyped column)."""


def python_types(clickhouse_type: str) -> tuple[tuple[type, ...], bool]:
    """The Python types a value of `clickhouse_type` may have, and whether None is allowed.

    An empty tuple means any value is accepted (a type this module does not check).
    """
    nullable = clickhouse_type.startswith("Nullable(")
    base = clickhouse_type
    while match := _WRAPPER.match(base):
        base = match.group(1)
    if base == "String":
        return (str,), nullable
    if base == "Bool":
        return (bool,), nullable
    if re.fullmatch(r"U?Int\d+", base):
        return (int,), nullable
    if base.startswith("DateTime"):
        return (datetime,), nullable
    return (), nullable


@dataclass(frozen=True)
class Column:
    """One column: its name, ClickHouse type, optional codec, and the migration adding it.

    `added_in` is None for a column the table was created with; a column added later names the
    migration version whose `ALTER TABLE ... ADD COLUMN` brings it to existing stores.
    """

    name: str
    type: str
    codec: str | None = None
    added_in: int | None = None
    _kinds: tuple[builtins.type, ...] = field(init=False, repr=False, compare=False)
    _nullable: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kinds, nullable = python_types(self.type)
        object.__setattr__(self, "_kinds", kinds)
        object.__setattr__(self, "_nullable", nullable)

    @property
    def definition(self) -> str:
        """The column as a CREATE or ALTER statement spells it."""
        codec = f" CODEC({self.codec})" if self.codec else ""
        return f"{self.name} {self.type}{codec}"

    def check(self, table: str, value: object) -> None:
        """Raise `SchemaError` when `value` cannot be this column's (None in a non-Nullable...)."""
        if value is None:
            if not self._nullable:
                raise SchemaError(f"Column {table}.{self.name} ({self.type}) cannot be None.")
            return
        if self._kinds and not _is_instance(value, self._kinds):
            raise SchemaError(
                f"Column {table}.{self.name} ({self.type}) cannot hold "
                f"{type(value).__name__} value {value!r}."
            )


@dataclass(frozen=True)
class Index:
    """A data-skipping index: `INDEX <name> <expression> TYPE <type> GRANULARITY <granularity>`."""

    name: str
    expression: str
    type: str
    granularity: int = 1

    @property
    def definition(self) -> str:
        kind = f"TYPE {self.type} GRANULARITY {self.granularity}"
        return f"INDEX {self.name} {self.expression} {kind}"


@dataclass(frozen=True, eq=False)
class Table:
    """One store table, declared once: DDL, column order and row checks all come from here.

    Tables compare and hash by identity: each is declared once, as a module constant.
    """

    name: str
    columns: tuple[Column, ...]
    order_by: tuple[str, ...]
    engine: str = "ReplacingMergeTree"
    indexes: tuple[Index, ...] = ()
    settings: tuple[str, ...] = ()
    _by_name: dict[str, Column] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_name = {column.name: column for column in self.columns}
        if len(by_name) != len(self.columns):
            raise SchemaError(f"Table {self.name} declares a column twice.")
        unknown = [key for key in self.order_by if key not in by_name]
        if unknown:
            raise SchemaError(f"Table {self.name} orders by undeclared column(s) {unknown}.")
        object.__setattr__(self, "_by_name", by_name)

    @property
    def column_names(self) -> tuple[str, ...]:
        """The column names in declared order: the order of inserts and selects."""
        return tuple(self._by_name)

    @property
    def column_types(self) -> tuple[str, ...]:
        """The column types in declared order."""
        return tuple(column.type for column in self._by_name.values())

    def insert(self, client: Client, rows: Sequence[Sequence[object]]) -> None:
        """Insert `rows` (each in `column_names` order), naming the columns and their types:
        the client then sends them at once, where it would first ask the store to describe the
        table (a query per insert, a tenth of the projector's writing)."""
        client.insert(
            self.name, rows, column_names=self.column_names, column_type_names=self.column_types
        )

    def column(self, name: str) -> Column:
        """The declared column `name`; `SchemaError` when the table has none of that name."""
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(f"Table {self.name} has no column {name!r}.") from None

    def create_statement(self) -> str:
        """`CREATE TABLE IF NOT EXISTS` with the columns the table was created with."""
        parts = [c.definition for c in self.columns if c.added_in is None]
        parts += [index.definition for index in self.indexes]
        statement = (
            f"CREATE TABLE IF NOT EXISTS {self.name} ({_INDENT}{(',' + _INDENT).join(parts)}\n)"
            f"\nENGINE = {self.engine}\nORDER BY {_key(self.order_by)}"
        )
        if self.settings:
            statement += f"\nSETTINGS {', '.join(self.settings)}"
        return statement

    def add_column_statements(self, version: int) -> tuple[str, ...]:
        """The `ALTER TABLE ... ADD COLUMN IF NOT EXISTS` statements of migration `version`."""
        return tuple(
            f"ALTER TABLE {self.name} ADD COLUMN IF NOT EXISTS {column.definition}"
            for column in self.columns
            if column.added_in == version
        )

    def row(self, /, **values: object) -> Row:
        """One row of this table, given by column name (checked now, see `Row`)."""
        return Row(self, values)

    def ordered(self, values: Mapping[str, object]) -> list[object]:
        """The values of a checked row in `column_names` order."""
        return [values[name] for name in self._by_name]

    def check(self, values: Mapping[str, object]) -> None:
        """Raise `SchemaError` unless `values` names every column once, each with a fit value."""
        by_name = self._by_name
        if len(values) != len(by_name):  # as many names, each a column: the same names
            raise SchemaError(self._mismatch(values.keys()))
        for name, value in values.items():
            column = by_name.get(name)
            if column is None:
                raise SchemaError(self._mismatch(values.keys()))
            if type(value) not in column._kinds:  # the common case costs one lookup
                column.check(self.name, value)

    def _mismatch(self, names: Iterable[str]) -> str:
        given = set(names)
        missing = [name for name in self._by_name if name not in given]
        unknown = sorted(given - self._by_name.keys())
        problems = []
        if missing:
            problems.append(f"lacks column(s) {', '.join(missing)}")
        if unknown:
            problems.append(f"has unknown column(s) {', '.join(unknown)}")
        return f"A row of {self.name} {' and '.join(problems)}."


@dataclass(frozen=True, slots=True)
class Row:
    """One row of one table, keyed by column name; checked against the table when built."""

    table: Table
    values: Mapping[str, object]

    def __post_init__(self) -> None:
        self.table.check(self.values)

    def __getitem__(self, column: str) -> object:
        return self.values[column]

    def ordered(self) -> list[object]:
        """The values in the table's column order, as an insert takes them."""
        return self.table.ordered(self.values)


def _key(columns: tuple[str, ...]) -> str:
    return columns[0] if len(columns) == 1 else f"({', '.join(columns)})"


def _is_instance(value: object, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in kinds:
        return False  # a bool is an int to Python, never to a numeric column
    return isinstance(value, kinds)
