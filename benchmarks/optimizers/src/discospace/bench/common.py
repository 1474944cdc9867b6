"""What every optimizer benchmark shares: a result table, its JSON file and its printout.

A benchmark returns a `BenchResult`: its name, its settings, one or more tables (columns and
rows of plain values) and free-form details (per-seed figures). `write_result` stores it as
`benchmarks/results/<name>.json` (or another folder); `print_result` shows the tables with rich.

A benchmark also tells a `Progress` after each part it finishes (a workload, a method): the
result so far (`complete` False until the last part, `progress` such as "3 of 12 workloads") and
a line to show. `ResultFile` writes that result at once, so an interruption keeps every part
done; `earlier_run` says what a file from an earlier run held before a new run replaces it.
"""

from __future__ import annotations

import json
import math
import statistics
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


def write_result(result: BenchResult, folder: Path | None = None) -> Path:
    """Write `result` as `<folder>/<name>.json` (default `benchmarks/results/`); its path."""
    path = result_path(result.name, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = path.with_name(f".{path.name}.partial")
    written.write_text(json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
    written.replace(path)
    return path


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
