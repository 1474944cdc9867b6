"""The fms-acceleration A100-80GB fine-tuning benchmark as a typed table.

124 runs of 100 steps: one row per (model, number of GPUs, per-device batch size, framework
config, PEFT method, dtype). A row without throughput did not finish (out of memory): that
configuration is invalid. `load()` gives the columns that matter with fixed types, the PEFT method
of a full fine-tune as "none" (the CSV leaves it empty), and `validity` (throughput present).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from discospace.traces.data import fms_data_dir, required_file

FMS_FILE = "a100_80gb.csv"

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
    root = folder if folder is not None and (folder / FMS_FILE).exists() else fms_data_dir(folder)
    return typed(pd.read_csv(required_file(root / FMS_FILE)))


def typed(raw: pd.DataFrame) -> pd.DataFrame:
    """The raw CSV columns renamed and typed (see `load`)."""
    frame = raw.rename(
        columns={
            **_RENAMES,
            "train_tokens_per_second": "throughput",
            "mem_peak_torch_mem_alloc_in_bytes": "memory",
        }
    )
    frame["peft_method"] = frame["peft_method"].fillna("").replace("", "none")
    for column in _TEXT:
        frame[column] = frame[column].astype(str)
    for column in _WHOLE:
        frame[column] = frame[column].astype("int64")
    for column in _REAL:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    frame["validity"] = frame["throughput"].notna()
    return frame[[*CONFIGURATION, *_REAL, "validity"]].reset_index(drop=True)
