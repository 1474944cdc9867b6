"""Replaying a published table: rows indexed by configuration, served as measurements.

A configuration is the tuple of its constitutive property values as the table holds them
(renamed, values mapped, numbers normalised: 4, 4.0 and a cell's text "4" are one value), so an
entity finds its rows whatever order or numeric type its values come in. Several rows of one
configuration are repeated runs of it: measurement number `attempt` of a request gets one of
them, chosen from (seed, request id, attempt), so a retry or another operation may see another
run while the same request always sees the same one. An entity with no row is an invalid result,
"no recorded measurement".

Target cells: a valid result holds a value for every target, so a row with an empty target cell
(and no `invalid_when` rule that catches it first) is an invalid result naming the target. In a
column of numbers (one that holds any cell reading as a finite number), a number written as text
("1e3", read as text when another cell is "OOM") is that number, scaled; other text ("OOM",
"N/A") or infinity makes the row an invalid result quoting the cell. A Decimal is a float. A
cell that is no scalar at all (a timestamp, bytes) stops the worker at start, naming the cell.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from discospace.actuator.replay.config import (
    MissingRule,
    Repeats,
    TableReplay,
    resolve_path,
)
from discospace.actuator.replay.seeding import choose
from discospace.core import ExperimentSpec
from discospace.core.canonical import (
    NUMBER_TEXT,
    Value,
    canonical_json,
    format_value,
    normalise_value,
    not_finite,
)
from discospace.core.errors import SpecError
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.traces.cells import decimal_floats, decimal_value, index_as_columns

NO_ROW = "no recorded measurement"
Row = Mapping[str, Any]
Key = str


@dataclass(frozen=True)
class Replayed:
    """One measurement served from a trace, and how long it should seem to take."""

    outcome: ValidMeasurement | InvalidMeasurement
    duration_s: float = 0.0


def read_table(path: Path, fmt: str | None, texts: Sequence[str] = ()) -> pd.DataFrame:
    """The table in `path` (CSV or Parquet, by `fmt` or the suffix). In a CSV, the columns
    `texts` (the properties') hold what is written: only an empty cell is empty, where pandas
    reads `NA`, `None`, `null` or `n/a` as missing (the region `NA`, the peft method `None`);
    other columns (targets) keep pandas' missing words."""
    kind = fmt or ("parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv")
    if not path.is_file():
        raise SpecError(f"table.file: the table {path} does not exist")
    try:
        if kind == "parquet":
            # a column pandas wrote as the index (to_parquet after set_index) is a column here
            return index_as_columns(pd.read_parquet(path))
        with warnings.catch_warnings():
            # a row with more fields than the header: pandas would make the first column the
            # index and shift every other one onto its neighbour's name (index_col=False)
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(path, index_col=False)
        header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
        frame.attrs["header"] = list(header.iloc[0]) if len(header) else []  # as written
        written = [column for column in dict.fromkeys(texts) if column in frame.columns]
        if written:
            exact = pd.read_csv(
                path,
                usecols=written,
                keep_default_na=False,
                na_values=[""],
                dtype=str,
                index_col=False,
            )
            for column in written:  # only the cells pandas read as missing: the rest stay typed
                words = frame[column].isna() & exact[column].notna()
                if words.any():
                    frame[column] = frame[column].astype(object)
                    frame.loc[words, column] = exact.loc[words, column]
        return frame
    except pd.errors.ParserWarning:
        raise SpecError(
            f"table.file: {path} has a row holding more fields than the header names columns: "
            "give every extra field a column name, or remove it (R's write.table writes row "
            "names without a header: write with row.names = FALSE)"
        ) from None
    except (OSError, ValueError) as error:
        raise SpecError(f"table.file: {path} cannot be read as {kind} ({error})") from None


def is_empty(cell: object) -> bool:
    """A missing cell: NaN, None, pandas' NA (a nullable Int64/Float64/boolean column's gap)
    or an empty string."""
    if cell is None or cell is pd.NA or (isinstance(cell, str) and cell.strip() == ""):
        return True
    return isinstance(cell, float) and math.isnan(cell)


def cell_value(cell: object) -> Value:
    """A table cell as a property value (a Parquet decimal as the float it writes); an empty
    cell is ''."""
    if is_empty(cell):
        return ""
    if isinstance(cell, Decimal):
        return decimal_value(cell)
    return normalise_value(cell)


class ValueMap:
    """A column's value map, matching a cell by value or by its text (`1` or `"1"`)."""

    def __init__(self, mapping: Mapping[Value, Value]) -> None:
        pairs = [(normalise_value(k), normalise_value(v)) for k, v in mapping.items()]
        self._by_value = {_typed(key): value for key, value in pairs}
        self._by_text = {format_value(key): value for key, value in pairs}

    def __call__(self, cell: object) -> Value:
        value = cell_value(cell)
        typed = _typed(value)
        if typed in self._by_value:
            return self._by_value[typed]
        return self._by_text.get(format_value(value), value)


def _typed(value: Value) -> tuple[bool, Value]:
    """A value as a key that tells booleans from numbers (Python has True == 1): a map of
    `true` caught the cells holding 1 and 1.0."""
    return (isinstance(value, bool), value)


def configuration_key(values: Mapping[str, object]) -> Key:
    """The canonical key of a configuration (property name -> value), each value as its text
    (`match_text`), so that an entity's 4 finds a row whose cell holds it as text."""
    return canonical_json({name: match_text(v) for name, v in sorted(values.items())})


def match_text(value: object) -> str:
    """A value as a configuration key holds it: a number (or text that reads as a finite
    number: "4", "4.0", " 1e3 ") as its normalised text, anything else as `format_value` writes
    it. A column that mixes numbers and text ("auto" in some rows) is read as text throughout,
    and its rows of numbers still match the entities whose values are those numbers."""
    normal = normalise_value(value)
    if isinstance(normal, str):
        number = _number(normal)
        return normal if number is None else format_value(number)
    return format_value(normal)


class ReplayTable:
    """The rows of a table by configuration, and how to turn one into a measurement."""

    def __init__(
        self, config: TableReplay, frame: pd.DataFrame, seed: int = 0, source: str = "the table"
    ) -> None:
        _check_columns(config, frame, source)
        if frame.empty:  # every measurement would be 'no recorded measurement'
            raise SpecError(f"table: {source} has no rows, only a header")
        self.config = config
        self.seed = seed
        self._maps = {p.property_name: (p.column, ValueMap(p.values)) for p in config.properties}
        frame = decimal_floats(frame)
        self._rows = _index(frame, self._maps, source)
        self._numeric = _numeric_columns(config, frame, source)

    @classmethod
    def load(cls, config: TableReplay, base: Path, seed: int = 0) -> ReplayTable:
        path = resolve_path(config.file, base, "table.file")
        measured = {target.column for target in config.targets}
        if config.duration is not None:
            measured.add(config.duration.column)
        # a column both a property and a target reads as a target: its NA is missing
        texts = [prop.column for prop in config.properties if prop.column not in measured]
        return cls(config, read_table(path, config.format, texts), seed, str(path))

    def catalog(self, actuator: str) -> tuple[ExperimentSpec, ...]:
        required = tuple(p.property_name for p in self.config.properties if p.default is None)
        optional = {
            p.property_name: p.default for p in self.config.properties if p.default is not None
        }
        targets = tuple(t.property_name for t in self.config.targets)
        return tuple(
            ExperimentSpec(
                actuator=actuator,
                experiment=experiment.experiment,
                description=experiment.description,
                target_properties=targets,
                required_properties=required,
                optional_properties=optional,
            )
            for experiment in self.config.experiments
        )

    def rows_of(self, properties: Mapping[str, object]) -> Sequence[Row]:
        """Every row recorded for the configuration in `properties` (extra names ignored)."""
        chosen = {name: properties[name] for name in self._maps if name in properties}
        if len(chosen) < len(self._maps):
            return ()
        return self._rows.get(configuration_key(chosen), ())

    def replay(self, properties: Mapping[str, object], request_id: str, attempt: int) -> Replayed:
        """Measurement `attempt` of request `request_id` for the configuration `properties`."""
        rows = self.rows_of(properties)
        if not rows:
            return Replayed(InvalidMeasurement(reason=NO_ROW))
        row = rows[pick(self.config.repeats, self.seed, request_id, attempt, len(rows))]
        return Replayed(self.outcome(row), self.duration_s(row))

    def outcome(self, row: Row) -> ValidMeasurement | InvalidMeasurement:
        """The measurement one row records: invalid by the first rule it meets, else values."""
        for rule in self.config.invalid_when:
            if _violates(rule, row):
                return InvalidMeasurement(reason=rule.reason)
        values: dict[str, Value] = {}
        for target in self.config.targets:
            cell = row[target.column]
            if is_empty(cell):
                return InvalidMeasurement(
                    reason=f"the recorded row holds no value for '{target.property_name}'"
                )
            value = target_cell(cell)
            if target.column in self._numeric:
                number = _number(value)
                if number is None:
                    shown = format_value(value)[:80]
                    return InvalidMeasurement(
                        reason=f"the recorded row holds '{shown}' for "
                        f"'{target.property_name}', not a number"
                    )
                value = number
            values[target.property_name] = _scaled(value, target.scale)
        return ValidMeasurement(values=values)

    def duration_s(self, row: Row) -> float:
        """The row's recorded duration, scaled; 0 when it holds none, or none that is a finite
        number of seconds."""
        duration = self.config.duration
        if duration is None or is_empty(row[duration.column]):
            return 0.0
        seconds = _number(target_cell(row[duration.column]))
        if seconds is None:
            return 0.0
        scaled = float(seconds) * duration.scale
        return scaled if math.isfinite(scaled) and scaled > 0 else 0.0


def pick(repeats: Repeats, seed: int, request_id: str, attempt: int, count: int) -> int:
    """Which of `count` repeated runs serves measurement `attempt` of a request."""
    if repeats == "cycle":
        return (choose(count, seed, "cycle", request_id) + attempt - 1) % count
    return choose(count, seed, "random", request_id, attempt)


def target_cell(cell: object) -> Value:
    """A non-empty target or duration cell as a value (a Decimal as a float); `TypeError` for
    a cell that is no scalar (a timestamp, bytes)."""
    if isinstance(cell, Decimal):
        return float(cell)
    return normalise_value(cell)


def _number(value: Value) -> int | float | None:
    """`value` as a finite number (text that reads as one too); None when it is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not NUMBER_TEXT.fullmatch(text):  # float() also reads 1_000, other digits
            return None
        try:  # a whole number exactly: through a float, the id 2^53 + 1 was 2^53's row
            return int(text)
        except ValueError:
            value = normalise_value(float(text))
        assert isinstance(value, int | float)
    return value if math.isfinite(value) else None


def _numeric_columns(config: TableReplay, frame: pd.DataFrame, source: str) -> set[str]:
    """The target columns that hold numbers (any cell reading as a finite number); a
    `SpecError` naming the first target or duration cell that is no scalar."""
    columns = [target.column for target in config.targets]
    if config.duration is not None:
        columns.append(config.duration.column)
    numeric: set[str] = set()
    for column in dict.fromkeys(columns):
        for number, cell in enumerate(frame[column].tolist(), start=1):
            if is_empty(cell):
                continue
            try:
                value = target_cell(cell)
            except (TypeError, ValueError) as error:
                raise SpecError(
                    f"table: {source}, column '{column}', row {number}: {error}"
                ) from None
            if column not in numeric and _number(value) is not None:
                numeric.add(column)
    return numeric


def _scaled(value: Value, scale: float) -> Value:
    if scale == 1.0 or isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return float(value) * scale


def _violates(rule: MissingRule, row: Row) -> bool:
    return any(is_empty(row[column]) for column in rule.missing)


def _index(
    frame: pd.DataFrame, maps: Mapping[str, tuple[str, ValueMap]], source: str
) -> dict[Key, list[Row]]:
    rows: dict[Key, list[Row]] = {}
    written: dict[tuple[str, str], tuple[Value, int]] = {}  # (property, key text) -> first cell
    for number, row in enumerate(frame.to_dict("records"), start=1):
        values = {
            name: _property_cell(row, column, mapped, source, number)
            for name, (column, mapped) in maps.items()
        }
        for name, value in values.items():
            first, at = written.setdefault((name, match_text(value)), (value, number))
            if isinstance(first, str) and isinstance(value, str) and first != value:
                raise SpecError(
                    f"table: {source}, column '{maps[name][0]}': rows {at} and {number} hold "
                    f"{first!r} and {value!r}, which read as one number, so an entity could not "
                    "be told which row is its own: write them as one value, or map them apart "
                    "(properties[].values)"
                )
        rows.setdefault(configuration_key(values), []).append(row)
    return rows


def _property_cell(row: Row, column: str, mapped: ValueMap, source: str, number: int) -> Value:
    """A row's value of a property column; a `SpecError` naming the cell when it cannot be a
    property value (a timestamp, bytes or a struct of a Parquet column; infinity)."""
    try:
        value = mapped(row[column])
        if not_finite(value):
            raise ValueError(f"{value} is not a finite number")
    except (TypeError, ValueError) as error:
        raise SpecError(f"table: {source}, column '{column}', row {number}: {error}") from None
    return value


def _check_columns(config: TableReplay, frame: pd.DataFrame, source: str) -> None:
    named: list[tuple[str, str]] = [
        *((f"properties[{i}]", p.column) for i, p in enumerate(config.properties)),
        *((f"targets[{i}]", t.column) for i, t in enumerate(config.targets)),
        *(
            (f"invalid_when[{i}]", column)
            for i, rule in enumerate(config.invalid_when)
            for column in rule.missing
        ),
    ]
    if config.duration is not None:
        named.append(("duration", config.duration.column))
    header = frame.attrs.get("header", [str(name) for name in frame.columns])
    for where, column in named:
        if column not in frame.columns:
            raise SpecError(f"table.{where}: {source} has no column '{column}'")
        if header.count(column) > 1:  # pandas keeps the first, renames the other 'name.1'
            at = ", ".join(str(i + 1) for i, name in enumerate(header) if name == column)
            raise SpecError(
                f"table.{where}: {source} names the column '{column}' more than once (columns "
                f"{at}): give each column once"
            )
