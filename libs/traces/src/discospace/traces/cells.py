"""A trace's CSV file read and checked cell by cell, so that bad input is one sentence.

- `read_cells(path, label, needed, error)`: every cell as text ("" when empty), or `error`
  saying in one sentence that the file cannot be read, is no CSV, lacks a needed column, names
  a needed column twice or has no rows;
- `Number`: what the cells of a numeric column must hold (a whole number, above a bound, which
  spellings mean "no value");
- `numbers(cells, rules, path, label, error)`: those columns as numbers (NaN where a cell means
  no value), or `error` naming the first bad cell: its column and its data row, counted from 1
  for the first row below the header (blank lines are not rows).

The readers of the traces (`fms`, `zeus`) call these before they type anything, so a table that
is refused is refused before a benchmark runs or writes.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from discospace.core.canonical import NUMBER_TEXT
from discospace.traces.data import required_file

_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
"""How pandas says that a row has more cells than the header (a line number of the file)."""
SHOWN_CHARACTERS = 40
"""A bad cell longer than this is shown cut, with an ellipsis."""


@dataclass(frozen=True)
class Number:
    """What every cell of a numeric column must hold."""

    whole: bool = False
    above: float | None = 0.0
    """Every value must be greater than this; None: any finite number."""
    missing: tuple[str, ...] = ()
    """Spellings, lower case, of a cell that holds no value and may ("" is an empty cell)."""
    missing_means: str = ""
    """What such a cell means, told when a cell holds NaN or an infinity instead."""


def read_cells(
    path: Path, label: str, needed: Sequence[str], error: type[Exception]
) -> pd.DataFrame:
    """Every cell of the CSV file `path` as text. `TraceDataMissingError` when it is absent;
    `error` (a sentence naming the `label` and `path`) when it cannot be read or parsed, lacks
    a column of `needed`, or has no rows."""
    required_file(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            cells = pd.read_csv(path, dtype=str, keep_default_na=False, index_col=False)
            header = pd.read_csv(path, dtype=str, header=None, nrows=1, keep_default_na=False)
    except (
        pd.errors.ParserError,
        pd.errors.ParserWarning,
        pd.errors.EmptyDataError,
        UnicodeDecodeError,
    ) as problem:
        raise error(
            f"The {label} {path} is not a readable CSV file ({_reason(problem)})."
        ) from None
    except OSError as problem:
        raise error(f"The {label} {path} cannot be read ({_reason(problem)}).") from None
    named = [str(name).strip() for name in header.iloc[0]] if len(header) else []
    cells.columns = [str(name).strip() for name in cells.columns]  # "batch_size ," too
    twice = [column for column in needed if named.count(column) > 1]
    if twice:  # pandas keeps the first and renames the other 'name.1': which was meant?
        at = [str(i + 1) for i, name in enumerate(named) if name == twice[0]]
        raise error(
            f"The {label} {path} names the column '{twice[0]}' more than once (columns "
            f"{', '.join(at)}): give each column once."
        )
    missing = [column for column in needed if column not in cells.columns]
    if missing:
        names = ", ".join(f"'{column}'" for column in missing)
        raise error(
            f"The {label} {path} has no column{'s' if len(missing) > 1 else ''} {names} "
            f"(it needs {', '.join(needed)})."
        )
    if cells.empty:
        raise error(f"The {label} {path} has no rows, only a header.")
    # text is compared as written: "imagenet " matched no workload, which was left out in silence
    return cells.fillna("").apply(lambda column: column.str.strip())


def numbers(
    cells: pd.DataFrame,
    rules: Mapping[str, Number],
    path: Path,
    label: str,
    error: type[Exception],
) -> pd.DataFrame:
    """`cells` with the columns of `rules` as numbers: int64 for a whole column without a
    missing value, float64 (NaN: no value) otherwise. `error` names the first bad cell (by data
    row, then in the order of `rules`)."""
    bad = [_first_bad(cells[column], column, rule) for column, rule in rules.items()]
    found = [b for b in bad if b is not None]
    if found:
        row, column, text, problem = min(found, key=lambda b: b[0])
        raise error(
            f"The {label} {path} has {_shown(text)} in column '{column}' of data row {row + 1}, "
            f"{problem}."
        )
    typed = cells.copy()
    for column, rule in rules.items():
        typed[column] = _values(cells[column], rule)
    return typed


MAX_WHOLE = 2**53
"""The largest whole-number cell: above it a float no longer holds every whole number, and at
2^63 the int64 column would wrap to a negative number."""


def _problem(text: str, rule: Number) -> str | None:
    """Why the cell `text` breaks `rule` (a clause: "which is not a number"), None if it holds."""
    cell = text.strip()
    if cell.lower() in rule.missing:
        return None
    if not cell:
        return "where a number is needed"
    if not NUMBER_TEXT.fullmatch(cell):  # float() also reads "1_000" and other scripts' digits
        return "which is not a number"
    value = float(cell)
    if not math.isfinite(value):
        means = f" (an empty cell means {rule.missing_means})" if rule.missing_means else ""
        return f"which is not a finite number{means}"
    if rule.whole and not value.is_integer():
        return "which is not a whole number"
    if rule.whole and abs(value) > MAX_WHOLE:
        return f"which is too large (above 2^53, {MAX_WHOLE})"
    if rule.above is not None and value <= rule.above:
        bound = f"at least {math.floor(rule.above) + 1}" if rule.whole else f"above {rule.above:g}"
        return f"which is not {bound}"
    return None


def _first_bad(column: pd.Series, name: str, rule: Number) -> tuple[int, str, str, str] | None:
    """(row position, column, text, problem) of the column's first bad cell, or None."""
    for position, text in enumerate(column):
        problem = _problem(text, rule)
        if problem is not None:
            return position, name, text, problem
    return None


def _values(column: pd.Series, rule: Number) -> pd.Series:
    missing = column.str.strip().str.lower().isin(rule.missing)
    values = column.where(~missing).map(float, na_action="ignore").astype("float64")
    return values.astype("int64") if rule.whole and not missing.any() else values


def _shown(text: str) -> str:
    if not text.strip():
        return "an empty cell"
    cut = text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 1] + "…"
    return f"'{cut}'"


def _reason(problem: Exception) -> str:
    if isinstance(problem, pd.errors.EmptyDataError):
        return "it is empty"
    if isinstance(problem, pd.errors.ParserWarning):
        return "a row has more cells than the header"
    if isinstance(problem, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(problem, OSError) and problem.strerror:
        return problem.strerror
    text = str(problem)
    fields = _FIELDS.search(text)
    if fields is not None:
        expected, line, saw = fields.groups()
        return f"line {line} has {saw} cells where the header has {expected}"
    return text.splitlines()[0].rstrip(".") if text else type(problem).__name__


def decimal_value(cell: Decimal) -> int | float:
    """A Parquet decimal cell as the number it holds: a whole one exactly (through a float,
    the id 2^53 + 1 was 2^53), a fractional one as the nearest float."""
    if cell.is_finite() and cell == cell.to_integral_value():
        return int(cell)
    return float(cell)


def index_as_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with the named levels of its index as columns (a Parquet file written by
    `to_parquet` after `set_index`), but those already columns (`set_index(..., drop=False)`:
    inserting them again failed)."""
    names = list(frame.index.names)
    if all(name is None for name in names):
        return frame
    moved = [name for name in names if name is not None and name not in frame.columns]
    if not moved:
        return frame.reset_index(drop=True)
    frame = frame.reset_index(level=moved)
    return frame.reset_index(drop=True) if len(moved) < len(names) else frame


def decimal_floats(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with its float32 (and float16) columns as the decimals they print as.

    A Parquet file often stores a learning rate as float32: its 0.1 is 0.10000000149011612 as a
    Python float, which would match no entity's 0.1, and a float32 target would be reported
    with digits no one measured. Its shortest text ("0.1", as numpy prints it) read back as a
    float64 is the value meant.
    """
    narrow = [column for column, dtype in frame.dtypes.items() if _narrow_float(dtype)]
    if not narrow:
        return frame
    frame = frame.copy()
    for column in narrow:
        kind = frame[column].dtype
        narrow_values = frame[column].to_numpy(getattr(kind, "numpy_dtype", kind), na_value=np.nan)
        frame[column] = np.array([float(str(value)) for value in narrow_values], dtype="float64")
    return frame


def _narrow_float(dtype: object) -> bool:
    """A float type narrower than a Python float: numpy's float32 and float16, and pandas'
    nullable Float32 (what `convert_dtypes()` makes of a float32 column)."""
    numpy_type = getattr(dtype, "numpy_dtype", dtype)  # a nullable Float32's numpy type
    return isinstance(numpy_type, np.dtype) and numpy_type.kind == "f" and numpy_type.itemsize < 8
