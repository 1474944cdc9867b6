"""Start-up of the CLI: wall time of a help page, beside the interpreter's own floor.

Run: .venv/bin/python benchmarks/bench_cli.py [--rounds 5]  (or `make bench`). Each round runs,
interleaved so that the machine's load falls on all of them alike, a fresh interpreter for:
`python -c pass` (the floor), `python -c "import typer"` (the library the CLI is built on),
`discospace --help` and `discospace operation create --help`. Prints min / median / max
seconds of each and the ratio of each command to the floor and to `import typer`. The issue's
target: both help pages under 0.3 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ENTRY = "from discospace.cli.main import main; main()"
SUBJECTS = {
    "python -c pass": ["-c", "pass"],
    "import typer": ["-c", "import typer"],
    "discospace --help": ["-c", ENTRY, "--help"],
    "discospace operation create --help": ["-c", ENTRY, "operation", "create", "--help"],
}
FLOORS = ("python -c pass", "import typer")


def wall(arguments: list[str]) -> float:
    """Seconds a fresh interpreter takes to run `arguments` to its exit."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *arguments],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return time.perf_counter() - started


def measure(rounds: int) -> dict[str, list[float]]:
    """Every subject once per round, in turn (one warm-up round first, not counted)."""
    for arguments in SUBJECTS.values():
        wall(arguments)
    times: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    for _ in range(rounds):
        for name, arguments in SUBJECTS.items():
            times[name].append(wall(arguments))
    return times


def spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def ratios(subject: list[float], floor: list[float]) -> str:
    """Min / median / max of the round-by-round ratio (each round's own floor)."""
    return spread([s / f for s, f in zip(subject, floor, strict=True)]).replace(".000", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    times = measure(rounds)
    table = Table(title=f"CLI start-up, {rounds} interleaved rounds (min / median / max)")
    table.add_column("command")
    table.add_column("seconds")
    for floor in FLOORS:
        table.add_column(f"ratio to {floor}")
    for name, values in times.items():
        cells = [ratios(values, times[f]) if name not in FLOORS else "" for f in FLOORS]
        table.add_row(name, spread(values), *cells)
    Console().print(table)


if __name__ == "__main__":
    main()
