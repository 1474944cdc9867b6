"""The fms-acceleration A100-80GB fine-tuning benchmark as a typed table.

124 runs of 100 steps: one row per (model, number of GPUs, per-device batch size, framework
config, PEFT method, dtype). A row without throughput did not finish (out of memory): that
configuration is invalid. `load()` gives the columns that matter with fixed types, the PEFT method
of a full fine-tune as "none" (the CSV leaves it empty), and `validity` (throughput present).

`load_table(path)` reads any CSV file in the same format, whatever its name: it needs the
columns in `NEEDED` (a table without one is refused with `FmsTableError`, naming it); the other
columns are optional (an absent text column reads as "", an absent number as NaN).

Every cell of a needed number is checked first (`CHECKED`), and `FmsTableError` names the first
bad one (file, data row, column): a number of GPUs and a batch size are whole numbers of at least
1; a runtime and a throughput are finite numbers above 0, or empty (the run did not finish: the
published table leaves both empty then). The other measured columns are read as numbers where
they are ones (NaN elsewhere): the benchmarks do not use them.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from discospace.traces.cells import Number, numbers, read_cells
from discospace.traces.data import fms_data_dir

FMS_FILE = "a100_80gb.csv"
NEEDED = (
    "model_name_or_path",
    "num_gpus",
    "per_device_train_batch_size",
    "framework_config",
    "peft_method",
    "train_runtime",
    "train_tokens_per_second",
)
"""The raw columns a table needs: a configuration, its runtime and its throughput."""
LABEL = "table"
_MEASURED = Number(missing=("",), missing_means="the run did not finish")
CHECKED = {
    "num_gpus": Number(whole=True),
    "per_device_train_batch_size": Number(whole=True),
    "train_runtime": _MEASURED,
    "train_tokens_per_second": _MEASURED,
}
"""What the cells of the needed numbers must hold (a measurement is empty when the run failed)."""


class FmsTableError(ValueError):
    """A table that is not in the fms format; the message is one sentence."""


CONFIGURATION = (
    "model",
    "num_gpus",
    "per_device_train_batch_size",
    "framework_config",
    "peft_method",
    "torch_dtype",
)
"""The columns that identify a run (unique per row)."""

_RENAMES = {"model_name_or_path": "model"}
_TEXT = ("model", "framework_config", "peft_method", "torch_dtype")
_WHOLE = ("num_gpus", "per_device_train_batch_size")
_REAL = (
    "throughput",
    "train_samples_per_second",
    "train_runtime",
    "train_loss",
    "memory",
    "mem_nvidia_mem_reserved",
)


def load(folder: Path | None = None) -> pd.DataFrame:
    """The table from `folder` (the fms folder or the data folder holding it; default
    `fms_data_dir()`): `CONFIGURATION` columns, then `throughput` (train tokens per second),
    `memory` (peak torch allocation, bytes), the other measured columns, and `validity`."""
    return load_table(table_path(folder))


def table_path(folder: Path | None = None) -> Path:
    """The published table's file in `folder` (the fms folder or the data folder holding it;
    default `fms_data_dir()`)."""
    root = folder if folder is not None and (folder / FMS_FILE).exists() else fms_data_dir(folder)
    return root / FMS_FILE


def load_table(path: Path) -> pd.DataFrame:
    """The table in the CSV file `path` (any name), typed as `load` types it.
    `TraceDataMissingError` when the file is absent, `FmsTableError` when it is no CSV a
    reader can parse, a column of `NEEDED` is missing, it has no rows, or a cell of `CHECKED`
    is bad (naming its data row and column)."""
    cells = read_cells(path, LABEL, NEEDED, FmsTableError)
    return typed(numbers(cells, CHECKED, path, LABEL, FmsTableError))


def typed(raw: pd.DataFrame) -> pd.DataFrame:
    """The raw CSV columns renamed and typed (see `load`); optional columns that are absent
    are filled ("" for text, NaN for numbers)."""
    frame = raw.rename(
        columns={
            **_RENAMES,
            "train_tokens_per_second": "throughput",
            "mem_peak_torch_mem_alloc_in_bytes": "memory",
        }
    )
    absent = [c for c in (*_TEXT, *_REAL) if c not in frame.columns]
    frame = frame.assign(**{c: "" if c in _TEXT else math.nan for c in absent})
    frame["peft_method"] = frame["peft_method"].fillna("").replace("", "none")
    for column in _TEXT:
        frame[column] = frame[column].astype(str)
    for column in _WHOLE:
        frame[column] = pd.to_numeric(frame[column]).astype("int64")
    for column in _REAL:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    frame["validity"] = frame["throughput"].notna()
    return frame[[*CONFIGURATION, *_REAL, "validity"]].reset_index(drop=True)
