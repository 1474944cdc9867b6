"""A view's table as a file: CSV, JSON (a list of row objects) or Parquet."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from datetime import datetime
from typing import Literal, get_args

import pandas as pd

from discospace.core.canonical import beyond_64_bits, float_holds
from discospace.projector.errors import ViewError, quoted

ExportFormat = Literal["csv", "json", "parquet"]
FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
MEDIA_TYPES: dict[ExportFormat, str] = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}


def parse_format(text: str) -> ExportFormat:
    """The export format named by `text`; `ViewError` for any other name."""
    for name in FORMATS:
        if text == name:
            return name
    raise ViewError(f"format {quoted(text)} is not one of {', '.join(FORMATS)}.")


def export(table: pd.DataFrame, fmt: ExportFormat) -> bytes:
    """The table in format `fmt`; missing values are empty (CSV) or null (JSON, Parquet)."""
    return _WRITERS[fmt](table)


def _csv(table: pd.DataFrame) -> bytes:
    """RFC 4180's CRLF line ends: Python's writer quotes a cell holding a character of the line
    end only, so with "\n" a cell holding a lone carriage return was written bare, and readers
    broke its row there."""
    return table.to_csv(index=False, lineterminator="\r\n").encode()


def _json(table: pd.DataFrame) -> bytes:
    """Each number as its shortest exact text (pandas' writer keeps 15 decimal places, so
    1.23456789e-10 would be 0.000000000123457), missing values (and any infinity, which JSON
    cannot write) as null."""
    cells = table.astype(object)
    cells = cells.where(table.notna() & ~cells.isin([math.inf, -math.inf]), None)
    rows = cells.to_dict("records")
    return json.dumps(rows, ensure_ascii=False, allow_nan=False, default=_json_value).encode()


def _json_value(value: object) -> object:
    """A cell `json` cannot write itself: a timestamp as ISO 8601, a numpy scalar as its value."""
    if isinstance(value, pd.Timestamp | datetime):
        return value.isoformat()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be written as JSON")


def _parquet(table: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    arrow_safe(table).to_parquet(buffer, index=False, engine="pyarrow")
    return buffer.getvalue()


def arrow_safe(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with every column of mixed value types (e.g. 4 and "auto"), every column
    holding a whole number beyond 64 bits, and every column of fractions beside a whole number
    no float holds (2^53 + 1), turned to text.

    Parquet columns hold one type, and its integers 64 bits; numbers of both kinds (int and
    float) stay numbers.
    """
    safe = table.copy()
    for name in safe.columns:
        column = safe[name]
        if column.dtype != object:
            continue
        present = column.dropna()
        kinds = {_kind(value) for value in present}
        if len(kinds) > 1 or "whole beyond 64 bits" in kinds or _float_only_inexactly(present):
            safe[name] = column.map(lambda v: None if pd.isna(v) else str(v)).astype(object)
    return safe


def _float_only_inexactly(numbers: pd.Series) -> bool:
    """True for numbers that Arrow would make one float64 column of (fractions beside whole
    numbers), losing a whole number's digits beyond 2^53."""
    whole = [v for v in numbers if type(v) is int]
    return len(whole) < len(numbers) and not all(float_holds(v) for v in whole)


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if beyond_64_bits(value):
        return "whole beyond 64 bits"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


_WRITERS: dict[ExportFormat, Callable[[pd.DataFrame], bytes]] = {
    "csv": _csv,
    "json": _json,
    "parquet": _parquet,
}
