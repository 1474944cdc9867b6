"""What every optimizer benchmark shares: a result table, its JSON file and its printout.

A benchmark returns a `BenchResult`: its name, its settings, one or more tables (columns and
rows of plain values) and free-form details (per-seed figures). `write_result` stores it as
`benchmarks/results/<name>.json` (or another folder); `print_result` shows the tables with rich.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
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

    def to_json(self) -> dict[str, Any]:
        return _finite(asdict(self))


def default_results_dir() -> Path:
    """`benchmarks/results/` of the repository this package is installed from (editable)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "libs").is_dir() and (parent / "pyproject.toml").is_file():
            return parent / "benchmarks" / "results"
    return Path.cwd() / "benchmarks" / "results"


def write_result(result: BenchResult, folder: Path | None = None) -> Path:
    """Write `result` as `<folder>/<name>.json` (default `benchmarks/results/`); its path."""
    target = folder if folder is not None else default_results_dir()
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{result.name}.json"
    path.write_text(json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
    return path


def print_result(result: BenchResult, console: Console | None = None) -> None:
    """Show every table of `result`, then its notes."""
    out = console or Console()
    for table in result.tables:
        out.print(_rich_table(table))
    for note in result.notes:
        out.print(note)


def median(values: Iterable[float]) -> float:
    return float(statistics.median(list(values)))


def fmt(value: Cell, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.{digits}g}"
    return str(value)


def _rich_table(table: ResultTable) -> Table:
    shown = Table(title=table.title)
    for column in table.columns:
        shown.add_column(column, overflow="fold")
    for row in table.rows:
        shown.add_row(*(fmt(cell) for cell in row))
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
