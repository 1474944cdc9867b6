"""What every optimizer benchmark shares: a result table, its JSON file and its printout.

A benchmark returns a `BenchResult`: its name, its settings, one or more tables (columns and
rows of plain values) and free-form details (per-seed figures). `write_result` stores it as
`benchmarks/results/<name>.json` (or another folder); `print_result` shows the tables with rich.

A benchmark also tells a `Progress` after each part it finishes (a workload, a method): the
result so far (`complete` False until the last part, `progress` such as "3 of 12 workloads") and
a line to show. `ResultFile` writes that result at once, so an interruption keeps every part
done; `earlier_run` says what a file from an earlier run held before a new run replaces it.

Before anything runs, `ready` makes the results folder and refuses one that cannot be made or
written in, or a result path taken by a folder; a write that fails later all the same
(`write_file`) leaves no partial file behind. Both say so in one sentence (`ResultWriteError`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

Cell = str | int | float | None


@dataclass(frozen=True)
class ResultTable:
    """One table of a benchmark's results."""

    title: str
    columns: tuple[str, ...]
    rows: list[tuple[Cell, ...]] = field(default_factory=list)

    def add(self, *cells: Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of '{self.title}' needs {len(self.columns)} cells")
        self.rows.append(cells)


@dataclass(frozen=True)
class BenchResult:
    """A benchmark's outcome: settings, tables, details."""

    name: str
    settings: dict[str, Any]
    tables: list[ResultTable]
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    """False while parts are still to run (a result written as it goes)."""
    progress: str = ""
    """How much is done, in words ("3 of 12 workloads")."""

    def to_json(self) -> dict[str, Any]:
        return _finite(asdict(self))


Progress = Callable[[BenchResult, str], None]
"""Told after each finished part of a benchmark: the result so far and a line to show."""


class ResultFile:
    """The JSON files of a run, each rewritten as soon as a part of its benchmark is done."""

    def __init__(self, folder: Path | None, console: Console) -> None:
        self.folder, self.console = folder, console
        self.last: dict[str, BenchResult] = {}

    def update(self, result: BenchResult, line: str) -> None:
        """Write `result` now, then show `line` (a `Progress`)."""
        write_result(result, self.folder)
        self.last[result.name] = result
        self.console.print(line, markup=False, highlight=False)

    def stopped(self, name: str) -> str | None:
        """What the file of `name` keeps after the run stopped early (None: nothing written)."""
        result = self.last.get(name)
        if result is None or result.complete:
            return None
        return f"stopped after {result.progress}: {result_path(name, self.folder)} keeps them"


def result_path(name: str, folder: Path | None = None) -> Path:
    """Where `write_result` stores the result called `name`."""
    return (folder if folder is not None else default_results_dir()) / f"{name}.json"


def earlier_run(path: Path) -> str | None:
    """What the result file `path` holds from an earlier run, as a sentence; None when absent."""
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text())
        finished, progress = bool(stored.get("complete", True)), str(stored.get("progress", ""))
    except (OSError, ValueError, AttributeError):
        return f"{path} held something unreadable; this run replaces it"
    held = "a finished run" if finished else "an unfinished run"
    shown = f"{held} ({progress})" if progress else held
    return f"{path} held {shown}; this run replaces it as it goes"


def default_results_dir() -> Path:
    """`benchmarks/results/` of the repository this package is installed from (editable)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "libs").is_dir() and (parent / "pyproject.toml").is_file():
            return parent / "benchmarks" / "results"
    return Path.cwd() / "benchmarks" / "results"


class ResultWriteError(Exception):
    """A result file or its folder that cannot be written; the message is one sentence."""


def write_result(result: BenchResult, folder: Path | None = None) -> Path:
    """Write `result` as `<folder>/<name>.json` (default `benchmarks/results/`); its path."""
    path = result_path(result.name, folder)
    write_file(path, json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
    return path


def write_file(path: Path, text: str) -> None:
    """Write `text` as `path` through a partial file beside it that then replaces `path` at
    once (a reader never sees half a file). `ResultWriteError` when that fails: the partial
    file is removed and `path` is as it was."""
    written = partial_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        written.write_text(text)
        written.replace(path)
    except OSError as error:
        with contextlib.suppress(OSError):
            written.unlink(missing_ok=True)
        raise ResultWriteError(
            f"The result file {path} cannot be written ({_why(error)})."
        ) from None


def partial_path(path: Path) -> Path:
    """The file `write_file` writes before it replaces `path`."""
    return path.with_name(f".{path.name}.partial")


def ready(paths: Sequence[Path]) -> None:
    """Check, before anything runs, that the result files `paths` can be written, and make
    their folders: `ResultWriteError` when a result file (or its partial file) is taken by
    something that is not a file, or a folder cannot be made or written in (then the folders
    made here are removed again)."""
    for path in paths:
        for taken in (path, partial_path(path)):
            if os.path.lexists(taken) and not os.path.isfile(taken):
                raise ResultWriteError(
                    f"The result file {taken} cannot be written: a folder (or another thing "
                    "that is not a file) is in its place; move it or choose another folder."
                )
    for folder in dict.fromkeys(path.parent for path in paths):
        _make(folder)


def _make(folder: Path) -> None:
    """Make `folder` and write in it, or remove the folders made and raise `ResultWriteError`."""
    made = [f for f in (folder, *folder.parents) if not os.path.lexists(f)]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        for empty in made:
            with contextlib.suppress(OSError):
                empty.rmdir()
        raise ResultWriteError(
            f"The results folder {folder} cannot be made or written in ({_why(error)})."
        ) from None


def _why(error: OSError) -> str:
    return error.strerror or type(error).__name__


def print_result(result: BenchResult, console: Console | None = None) -> None:
    """Show every table of `result`, then its notes."""
    out = console or Console()
    for table in result.tables:
        out.print(_rich_table(table))
    for note in result.notes:
        out.print(note, markup=False, highlight=False)


def median(values: Iterable[float]) -> float:
    return float(statistics.median(list(values)))


def fmt(value: Cell, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.{digits}g}"
    return str(value)


def _rich_table(table: ResultTable) -> Table:
    shown = Table(title=escape(table.title))
    for column in table.columns:
        shown.add_column(escape(column), overflow="fold")
    for row in table.rows:
        shown.add_row(*(escape(fmt(cell)) for cell in row))
    return shown


def _finite(value: Any) -> Any:
    """JSON-safe values: infinities and NaN become None (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_finite(v) for v in value]
    return value
