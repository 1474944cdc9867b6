"""A file of measurements as ``store import`` reads it: its bytes, its columns, its cells (pure).

- :func:`read_table`: a CSV (every cell read as text; only an empty cell is missing) or a Parquet
  file (cells as typed) as a DataFrame, with the SHA-256 of the file's bytes.
- :func:`parse_renames`: the ``--map FILE_COLUMN=PROPERTY`` options.
- :func:`plan_columns`: which column gives which constitutive property, which target property,
  and the optional ``is_valid``, ``invalid_reason`` and ``duration_seconds``; a column named by
  ``--map`` wins over one that only has the property's name, and the other columns are ignored
  (the summary names them).
- Cells: :func:`is_missing`, :func:`target_value`, :func:`validity`, :func:`duration` and
  :func:`reason` turn one cell into what an event carries, or raise a :class:`CellError` that
  says in a few words why they cannot.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import math
import re
import warnings
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from discospace.cli.errors import CliError
from discospace.core.canonical import (
    NUMBER_TEXT,
    Value,
    beyond_64_bits,
    normalise_number,
    not_finite,
)
from discospace.core.loading import plain_scalar
from discospace.events.envelope import shortened

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

IS_VALID = "is_valid"
INVALID_REASON = "invalid_reason"
DURATION = "duration_seconds"
OPTIONAL_COLUMNS = (IS_VALID, INVALID_REASON, DURATION)
"""Columns with a fixed meaning besides the properties (all optional)."""

_CSV_SUFFIXES = {".csv": ",", ".tsv": "\t"}
_PARQUET_SUFFIXES = (".parquet", ".pq")
_NOT_A_VALUE = frozenset({"nan", "na", "n/a", "null", "none", "<na>"})
_WHOLE = re.compile(r"[+-]?[0-9]+")
"""The whole numbers a stored value may be (the store's Int64; Python reads longer text)."""
_TRUE = frozenset({"true", "yes", "1", "valid"})
_FALSE = frozenset({"false", "no", "0", "invalid"})


class CellError(ValueError):
    """One cell cannot be read as what its column gives; ``str(error)`` says why, briefly."""


@dataclass(frozen=True)
class Table:
    """A file's rows and the SHA-256 of its bytes."""

    name: str
    sha256: str
    frame: pd.DataFrame
    typed: bool = False
    """Parquet: cells carry their types. CSV: every cell is text (see `identifier_value`)."""


@dataclass(frozen=True)
class ColumnPlan:
    """What each column of the file gives (properties by name -> file column)."""

    constitutive: Mapping[str, str]
    targets: Mapping[str, str]
    is_valid: str | None
    invalid_reason: str | None
    duration: str | None
    ignored: tuple[str, ...]


MAX_TABLE_BYTES = 256 << 20
"""The largest table `store import` reads, decompressed: its rows are held in memory (as text
cells, then as events, several times its size). A larger one is refused before it is parsed;
a `/dev/zero` or a small gzip of zeros was read until the memory ran out."""


def read_table(path: Path, max_bytes: int = MAX_TABLE_BYTES) -> Table:
    """The rows of a CSV (``.csv``, ``.tsv``, optionally ``.gz``) or Parquet file of at most
    `max_bytes` (decompressed)."""
    try:
        with path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except OSError as error:
        raise CliError(f"{path}: cannot be read ({error.strerror or error})") from None
    if len(data) > max_bytes:
        raise CliError(_too_large(path, max_bytes))
    frame = _parse(path, data, max_bytes)
    frame.columns = [str(column).strip() for column in frame.columns]
    if frame.empty:
        raise CliError(f"{path}: holds no rows of measurements")
    typed = path.name.lower().endswith(_PARQUET_SUFFIXES)
    # a name that is not UTF-8 (its bytes kept as surrogates) as text an event can hold
    name = path.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return Table(name, hashlib.sha256(data).hexdigest(), frame, typed)


def _refuse_repeated_columns(path: Path, header: pd.DataFrame) -> None:
    """A CSV header (its first row, read as cells) naming a column twice: pandas keeps the
    first and renames the other 'name.1', which was then ignored in silence (which of the two
    was meant?)."""
    named = [str(cell).strip() for cell in header.iloc[0]] if len(header) else []
    # columns without a name ("a,b,,") are ignored as any unused column is, however many
    twice = next((column for column in named if column and named.count(column) > 1), None)
    if twice is not None:
        at = [str(i + 1) for i, column in enumerate(named) if column == twice]
        raise CliError(
            f"{path}: the header names the column '{twice}' more than once (columns "
            f"{', '.join(at)}); nothing was imported: name each column once"
        )


def _too_large(path: Path, max_bytes: int) -> str:
    return (
        f"{path}: holds more than {max_bytes >> 20} MiB (decompressed), the most `store import` "
        "reads at once; nothing was imported: split it into smaller files (rows already "
        "imported are skipped when a file is imported again)"
    )


def _gunzipped(path: Path, data: bytes, max_bytes: int) -> bytes:
    """`data` decompressed, refused beyond `max_bytes` (read no further than that)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
            plain = unzipped.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise CliError(f"{path}: cannot be read as gzip ({error})") from None
    if len(plain) > max_bytes:
        raise CliError(_too_large(path, max_bytes))
    return plain


def _parquet_rows(path: Path, data: bytes, max_bytes: int) -> pa.Table:
    """The rows of a Parquet file, read a batch at a time and refused once they hold more than
    `max_bytes` in memory: its own encodings (dictionaries, run lengths, compression) make a
    160 kB file twelve million rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(io.BytesIO(data))
    batches, held = [], 0
    for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS):
        held += batch.nbytes
        if held > max_bytes:
            raise CliError(_too_large(path, max_bytes))
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=parquet.schema_arrow)


_PARQUET_BATCH_ROWS = 65_536


def _parse(path: Path, data: bytes, max_bytes: int = MAX_TABLE_BYTES) -> pd.DataFrame:
    import pandas as pd  # here: the other commands start without pandas

    name = path.name.lower()
    compressed = name.endswith(".gz")
    stem = name.removesuffix(".gz")
    suffix = next((s for s in (*_CSV_SUFFIXES, *_PARQUET_SUFFIXES) if stem.endswith(s)), None)
    if suffix is None or (compressed and suffix in _PARQUET_SUFFIXES):
        raise CliError(
            f"{path}: not a file this command reads; give a .csv, .tsv (optionally .gz), "
            ".parquet or .pq file"
        )
    if compressed:
        data = _gunzipped(path, data, max_bytes)
    try:
        if suffix in _PARQUET_SUFFIXES:
            from discospace.traces.cells import decimal_floats, index_as_columns

            # whole-number columns stay whole where a cell is null (pandas made them float64:
            # 2^53 + 1 was filed as 2^53, another entity than the same row from a CSV)
            frame = _parquet_rows(path, data, max_bytes).to_pandas(types_mapper=_exact_integers)
            # a column pandas wrote as the index (to_parquet after set_index) is a column here;
            # float32 cells as the decimals they print as: its 0.1 is no other entity
            return decimal_floats(index_as_columns(frame))
        csv: dict[str, Any] = {
            "sep": _CSV_SUFFIXES[suffix],
            "compression": None,
            "dtype": str,
            "keep_default_na": False,
        }
        with warnings.catch_warnings():
            # a row with more fields than the header: pandas would drop them (index_col=False)
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.BytesIO(data),
                na_values=[""],
                index_col=False,  # rows ending in a delimiter: never a shifted index column
                **csv,
            )
        header = pd.read_csv(io.BytesIO(data), header=None, nrows=1, **csv)
    except CliError:
        raise
    except pd.errors.ParserWarning:
        raise CliError(
            f"{path}: a row holds more fields than the header names columns; nothing was "
            "imported: give every extra field a column name, or remove it (R's write.table "
            "writes row names without a header: write with row.names = FALSE)"
        ) from None
    except Exception as error:  # pandas and pyarrow raise many kinds
        kind = "Parquet" if suffix in _PARQUET_SUFFIXES else "CSV"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
        raise CliError(f"{path}: cannot be read as {kind} ({first_line})") from None
    _refuse_repeated_columns(path, header)
    return frame


def _exact_integers(arrow_type: Any) -> Any:
    """pandas' nullable integer type for an Arrow integer type (None: the default mapping)."""
    import pandas as pd
    import pyarrow as pa

    if pa.types.is_signed_integer(arrow_type):
        return pd.Int64Dtype()
    if pa.types.is_unsigned_integer(arrow_type):
        return pd.UInt64Dtype()
    return None


def parse_renames(options: Iterable[str]) -> dict[str, str]:
    """``--map FILE_COLUMN=PROPERTY`` options as file column -> property name."""
    renames: dict[str, str] = {}
    for option in options:
        column, equals, name = (part.strip() for part in option.partition("="))
        if not equals or not column or not name:
            raise CliError(f"--map {option!r} is not FILE_COLUMN=PROPERTY")
        if column in renames and renames[column] != name:
            raise CliError(f"--map gives column '{column}' twice ({renames[column]}, {name})")
        renames[column] = name
    return renames


def plan_columns(
    columns: Sequence[str],
    constitutive: Sequence[str],
    targets: Sequence[str],
    experiment_id: str,
    renames: Mapping[str, str],
) -> ColumnPlan:
    """What each column gives; a :class:`CliError` names a missing, unknown or doubled one."""
    unknown = [column for column in renames if column not in columns]
    if unknown:
        raise CliError(
            f"--map {unknown[0]}={renames[unknown[0]]}: the file has no column '{unknown[0]}' "
            f"(its columns: {', '.join(columns)})"
        )
    meaning = _Meanings(constitutive, targets, experiment_id)
    given: dict[tuple[str, str], str] = {}
    for column in sorted(columns, key=lambda c: c not in renames):  # renamed columns first
        what = meaning.of(renames.get(column, column))
        if what is None and column in renames:
            raise CliError(meaning.unknown(column, renames[column]))
        if what is not None and what in given:
            _check_pair(given[what], column, what[1], renames)
        elif what is not None:
            given[what] = column
    return _plan(columns, given, meaning)


def _check_pair(first: str, second: str, name: str, renames: Mapping[str, str]) -> None:
    """Two columns give ``name``: the second is ignored when ``--map`` named the first and only
    the second's own name says it; any other pair is an error."""
    if second in renames:
        raise CliError(f"columns '{first}' and '{second}' are both mapped to '{name}'")
    if first not in renames:
        raise CliError(f"columns '{first}' and '{second}' both give '{name}'")


def _plan(
    columns: Sequence[str], given: dict[tuple[str, str], str], meaning: _Meanings
) -> ColumnPlan:
    by_kind: dict[str, dict[str, str]] = {"constitutive": {}, "target": {}, "optional": {}}
    for (kind, name), column in given.items():
        by_kind[kind][name] = column
    missing = [name for name in meaning.constitutive if name not in by_kind["constitutive"]]
    if missing:
        raise CliError(
            f"the file has no column for the propert{'ies' if len(missing) > 1 else 'y'} "
            f"{', '.join(missing)} of the space (its columns: {', '.join(columns)}); "
            "name one with --map COLUMN=PROPERTY"
        )
    optional = by_kind["optional"]
    if not by_kind["target"] and IS_VALID not in optional and INVALID_REASON not in optional:
        raise CliError(
            f"the file has no column for any target property of {meaning.experiment_id} "
            f"({', '.join(meaning.targets)}); name one with --map COLUMN=TARGET"
        )
    used = set(given.values())
    return ColumnPlan(
        constitutive={name: by_kind["constitutive"][name] for name in meaning.constitutive},
        targets={
            name: by_kind["target"][name] for name in meaning.targets if name in by_kind["target"]
        },
        is_valid=optional.get(IS_VALID),
        invalid_reason=optional.get(INVALID_REASON),
        duration=optional.get(DURATION),
        ignored=tuple(column for column in columns if column not in used),
    )


@dataclass(frozen=True)
class _Meanings:
    """What a column name (or the name ``--map`` gives it) stands for."""

    constitutive: Sequence[str]
    targets: Sequence[str]
    experiment_id: str

    def of(self, name: str) -> tuple[str, str] | None:
        """(kind, property) for a property name, observed property id or optional column."""
        if name in self.constitutive:
            return ("constitutive", name)
        if name in self.targets:
            return ("target", name)
        experiment, dot, target = name.rpartition(".")
        if dot and experiment == self.experiment_id and target in self.targets:
            return ("target", target)
        return ("optional", name) if name in OPTIONAL_COLUMNS else None

    def unknown(self, column: str, name: str) -> str:
        known = [*self.constitutive, *self.targets, *OPTIONAL_COLUMNS]
        return (
            f"--map {column}={name}: '{name}' is not a property of the space, a target of "
            f"{self.experiment_id} or one of {', '.join(OPTIONAL_COLUMNS)} "
            f"(known: {', '.join(known)})"
        )


# -- cells ---------------------------------------------------------------------------------------


def is_missing(cell: Any) -> bool:
    """An empty cell: None, NaN, pandas' NA, or text that is only spaces."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return True
    if isinstance(cell, str):
        return not cell.strip()
    try:
        import pandas as pd

        return bool(pd.isna(cell))
    except (TypeError, ValueError):
        return False


def constitutive_value(cell: Any) -> Any:
    """A cell of a constitutive property, for its domain to read ("4" -> 4 where numeric; a
    Parquet decimal as the number it holds)."""
    if isinstance(cell, Decimal):
        from discospace.traces.cells import decimal_value

        return normalise_number(decimal_value(cell))
    return cell.strip() if isinstance(cell, str) else cell


def identifier_value(text: str) -> Value:
    """A CSV cell of an identifier property as a space file reads it unquoted (YAML 1.2's core
    schema: `core.loading.plain_scalar`), so that a row names the entity a space file or an
    actuator names: "7.50" is 7.5, "1e3" is 1000.0, "true" a boolean, anything else text."""
    return plain_scalar(text)


def target_value(cell: Any, typed: bool = False) -> Value | None:
    """A measured value: a number, true/false or text; None when the cell is empty. A text
    cell of a file of text cells (CSV) is read for the number or true/false it writes; one of
    a typed file (Parquet) is the text it holds, exactly ('0042' stays '0042')."""
    if is_missing(cell):
        return None
    if isinstance(cell, str):
        return cell if typed else _value_of_text(cell.strip())
    if isinstance(cell, bool):
        return cell
    if isinstance(cell, int | float):
        return _finite(cell)
    if isinstance(cell, Decimal):  # a Parquet decimal column
        from discospace.traces.cells import decimal_value

        return _finite(decimal_value(cell))
    raise CellError(f"{cell!r} is not a number, true/false or text")


def _value_of_text(text: str) -> Value | None:
    if text.lower() in _NOT_A_VALUE:
        return None
    if _WHOLE.fullmatch(text):
        digits = len(text.lstrip("+-").lstrip("0"))  # 000...042 is 42
        if digits > 19:  # int() of thousands of digits is refused by Python itself
            raise CellError(f"{text[:12]}... ({digits} digits) is beyond a 64-bit whole number")
        return _finite(int(text))
    if NUMBER_TEXT.fullmatch(text):
        return _finite(_float_of(text))
    lowered = text.lower()
    return lowered == "true" if lowered in ("true", "false") else text


def _float_of(text: str) -> float:
    """The float a number's text spells; a `CellError` when it is beyond what a float holds
    (1e400 read as inf: "inf is not a finite number", the cell unnamed) or so near 0 that it
    reads as 0 (1e-400 was imported as 0.0)."""
    number = float(text)
    spelled = text.lower().lstrip("+-") in ("inf", "infinity", "nan")
    if math.isinf(number) and not spelled:
        raise CellError(f"{text!r} is too large for a number (a float holds about 1.8e308)")
    mantissa = re.split("[eE]", text.lstrip("+-"))[0]
    if number == 0 and not spelled and mantissa.strip("0.") != "":  # no Decimal: 1e-999...9
        raise CellError(f"{text!r} is too near 0 for a number (a float holds about 5e-324)")
    return number


def _finite(number: int | float) -> int | float:
    """`number` when the store can hold it: finite, and a whole number within 64 bits."""
    if not_finite(number):
        raise CellError(f"{number} is not a finite number")
    if beyond_64_bits(number):
        raise CellError(f"{number} is beyond a 64-bit whole number")
    return number


def validity(cell: Any) -> bool | None:
    """An ``is_valid`` cell: true/false (also yes/no, 1/0, valid/invalid); None when empty."""
    if is_missing(cell):
        return None
    if isinstance(cell, bool):
        return cell
    text = str(normalise_number(cell)) if isinstance(cell, int | float) else str(cell)
    lowered = text.strip().lower()
    if NUMBER_TEXT.fullmatch(lowered) and float(lowered) in (0.0, 1.0):  # "1.0": a float column
        lowered = str(int(float(lowered)))
    if lowered in _TRUE or lowered in _FALSE:
        return lowered in _TRUE
    raise CellError(f"is_valid {text!r} is not true or false")


def duration(cell: Any) -> float:
    """A ``duration_seconds`` cell: seconds, not negative; 0 when empty."""
    if is_missing(cell):
        return 0.0
    try:
        value = target_value(cell)
    except CellError as error:
        raise CellError(f"duration_seconds {error}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise CellError(f"duration_seconds {cell!r} is not a number of seconds")
    return float(value)


def reason(cell: Any) -> str | None:
    """An ``invalid_reason`` cell as text, shortened as an actuator's reason is; None when
    empty or a missing-value word (``NA`` as R writes it, ``nan``, ``null``...)."""
    if is_missing(cell):
        return None
    text = " ".join(str(cell).split())
    return None if text.lower() in _NOT_A_VALUE else shortened(text)
