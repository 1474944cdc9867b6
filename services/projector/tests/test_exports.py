"""A view's table written as a file: the values read back as they were."""

from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd

from discospace.projector.exports import export

TABLE = pd.DataFrame(
    {
        "learning_rate": [1.23456789e-10, 0.30000000000000004, math.nan],
        "batch_size": pd.array([8, None, 4], dtype="Int64"),
        "energy": [1.5, math.inf, 2.0],
        "mode": [4, "auto", None],
        "at": pd.to_datetime(["2026-11-29T01:02:03", None, "2026-11-29T04:05:06"]),
    }
)


def test_json_keeps_every_digit_of_a_number_and_writes_missing_values_as_null() -> None:
    rows = json.loads(export(TABLE, "json"))

    assert [row["learning_rate"] for row in rows] == [1.23456789e-10, 0.30000000000000004, None]
    assert [row["batch_size"] for row in rows] == [8, None, 4]
    assert [row["energy"] for row in rows] == [1.5, None, 2.0]  # JSON has no infinity
    assert [row["mode"] for row in rows] == [4, "auto", None]
    assert [row["at"] for row in rows] == ["2026-11-29T01:02:03", None, "2026-11-29T04:05:06"]


def test_csv_and_parquet_keep_every_digit_too() -> None:
    from_csv = pd.read_csv(io.BytesIO(export(TABLE, "csv")))
    from_parquet = pd.read_parquet(io.BytesIO(export(TABLE, "parquet")))

    assert from_csv["learning_rate"][0] == from_parquet["learning_rate"][0] == 1.23456789e-10
    assert from_csv["learning_rate"][1] == 0.30000000000000004


def test_a_cell_holding_a_carriage_return_stays_in_its_row_in_csv() -> None:
    """A lone `\r` in a cell was written bare (Python's writer quotes only the characters of
    its line end, then "\n"): csv and pandas readers read three rows of two."""
    table = pd.DataFrame({"label": ["line one\rline two", "plain"], "value": [1.5, 2.0]})

    rows = list(csv.reader(io.StringIO(export(table, "csv").decode(), newline="")))

    assert rows == [["label", "value"], ["line one\rline two", "1.5"], ["plain", "2.0"]]
    assert pd.read_csv(io.BytesIO(export(table, "csv")))["label"].tolist() == [
        "line one\rline two",
        "plain",
    ]
