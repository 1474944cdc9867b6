"""Where the published traces live: `DISCOSPACE_DATA_DIR`, or `<repo>/../shared/data`.

The tables are never copied into the repository; code and tests read them from this folder and
say clearly when it is absent (tests skip with that sentence as the reason).
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "DISCOSPACE_DATA_DIR"
"""Environment variable naming the folder that holds the trace folders."""

ZEUS_FOLDER = "zeus-nsdi23-trace"
FMS_FOLDER = "fms-acceleration-a100"


class TraceDataMissingError(FileNotFoundError):
    """A trace folder or file is absent; the message names the path and how to point at it."""


def repo_root() -> Path:
    """The repository this package is installed from (editable), else the working directory."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "libs").is_dir() and (parent / "pyproject.toml").is_file():
            return parent
    return Path.cwd()


def data_dir() -> Path:
    """The folder holding the traces: `$DISCOSPACE_DATA_DIR`, else `<repo>/../shared/data`.

    Raises `TraceDataMissingError` when that folder does not exist.
    """
    configured = os.environ.get(DATA_DIR_ENV)
    folder = Path(configured) if configured else repo_root().parent / "shared" / "data"
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise TraceDataMissingError(
            f"The trace data folder {folder} {what}; set {DATA_DIR_ENV} to the folder "
            f"that holds {ZEUS_FOLDER}/ and {FMS_FOLDER}/."
        )
    return folder


def trace_dir(name: str, root: Path | None = None) -> Path:
    """The trace folder `name` under `root` (default `data_dir()`); raises
    `TraceDataMissingError` when it is absent: a `root` given by the user (the callers also
    take the trace folder itself) is named, else how to set the data folder."""
    if root is not None:
        if not (root / name).is_dir():
            raise TraceDataMissingError(
                f"{root} is neither a {name} trace folder nor a folder that holds {name}/; "
                "give one of those."
            )
        return root / name
    folder = data_dir() / name
    if not folder.is_dir():
        raise TraceDataMissingError(
            f"The trace folder {folder} does not exist; set {DATA_DIR_ENV} to the folder "
            f"that holds {name}/."
        )
    return folder


def zeus_data_dir(root: Path | None = None) -> Path:
    """The Zeus NSDI'23 trace folder (summary_train.csv, summary_power_<gpu>.csv)."""
    return trace_dir(ZEUS_FOLDER, root)


def fms_data_dir(root: Path | None = None) -> Path:
    """The fms-acceleration A100 folder (a100_80gb.csv)."""
    return trace_dir(FMS_FOLDER, root)


def required_file(path: Path) -> Path:
    """`path`, or `TraceDataMissingError` naming it when it is not a file."""
    if not path.is_file():
        raise TraceDataMissingError(f"The trace file {path} does not exist.")
    return path
