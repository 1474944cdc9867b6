"""What `discospace bench optimizers` runs: each chosen benchmark, its tables printed and its
JSON written (`common.write_result`).

The CLI imports this module only when the command is called, so the CLI needs neither this
package nor the services it benchmarks for anything else. `USER_ERRORS` are the errors a user
can meet (a missing trace file, a trace that cannot be simulated, an unknown benchmark name);
each is one sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from discospace.bench.common import BenchResult, print_result, write_result
from discospace.traces.data import TraceDataMissingError
from discospace.traces.zeus import ZeusTraceError

BENCHMARKS = ("zeus", "fms")


class UnknownBenchmarkError(ValueError):
    """A benchmark name that is not one of `BENCHMARKS`."""


USER_ERRORS: tuple[type[Exception], ...] = (
    TraceDataMissingError,
    ZeusTraceError,
    UnknownBenchmarkError,
)


def run(
    names: Sequence[str],
    *,
    zeus_data: Path | None = None,
    fms_data: Path | None = None,
    gpus: Sequence[str] = (),
    out: Path | None = None,
    console: Console | None = None,
) -> list[Path]:
    """Run the benchmarks in `names` (all when empty), print them; the JSON files written."""
    chosen = _chosen(names)
    shown = console or Console()
    written = []
    if "zeus" in chosen:
        written.append(_report(lambda: _zeus(zeus_data, gpus), out, shown))
    if "fms" in chosen:
        written.append(_report(lambda: _fms(fms_data), out, shown))
    return written


def _chosen(names: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(names) or BENCHMARKS
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        raise UnknownBenchmarkError(
            f"unknown benchmark {', '.join(unknown)}: choose among {', '.join(BENCHMARKS)}"
        )
    return chosen


def _zeus(data: Path | None, gpus: Sequence[str]) -> BenchResult:
    from discospace.bench import zeus

    kwargs: dict[str, Any] = {"data_dir": data}
    if gpus:
        kwargs["gpus"] = tuple(g.lower() for g in gpus)
    return zeus.run(**kwargs)


def _fms(data: Path | None) -> BenchResult:
    from discospace.bench import fms

    return fms.run(data)


def _report(benchmark: Callable[[], BenchResult], out: Path | None, console: Console) -> Path:
    result = benchmark()
    print_result(result, console)
    path = write_result(result, out)
    console.print(f"wrote {path}")
    return path
