"""``discospace bench optimizers``: the optimizer benchmarks, in process, on published tables.

Runs the Zeus batch-size optimizer on the Zeus NSDI'23 traces (`discospace.explorer.bench.zeus`)
and the model-based optimizers on the fms-acceleration table (`discospace.explorer.bench.fms`),
prints their tables and writes each as JSON under ``benchmarks/results/`` (or ``--out``). The
data paths are options, so any table in the same format can be benchmarked. No broker needed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer
from rich.console import Console

from discospace.cli.errors import CliError
from discospace.traces.data import TraceDataMissingError
from discospace.traces.zeus import ZeusTraceError

bench_app = typer.Typer(
    help="Benchmarks that run in process on published measurements.", no_args_is_help=True
)

BENCHMARKS = ("zeus", "fms")
WIDE = 200


@bench_app.command("optimizers")
def optimizers(
    zeus_data: Annotated[
        Path | None,
        typer.Option(
            "--zeus-data",
            help="Zeus trace folder (summary_train.csv, summary_power_<gpu>.csv) or the folder "
            "holding zeus-nsdi23-trace/. Default: $DISCOSPACE_DATA_DIR or ../shared/data.",
            show_default=False,
        ),
    ] = None,
    fms_data: Annotated[
        Path | None,
        typer.Option(
            "--fms-data",
            help="Folder holding a100_80gb.csv, or the folder holding fms-acceleration-a100/. "
            "Default: as --zeus-data.",
            show_default=False,
        ),
    ] = None,
    gpus: Annotated[
        list[str] | None,
        typer.Option("--gpu", help="Zeus power traces to use (repeatable). Default: v100, a40."),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Run only these benchmarks (repeatable): zeus, fms."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for the JSON results. Default: benchmarks/results/."),
    ] = None,
) -> None:
    """Benchmark the optimizers on published traces; print the tables and write JSON."""
    chosen = _chosen(only)
    console = Console(width=WIDE)
    if "zeus" in chosen:
        _run_zeus(zeus_data, gpus, out, console)
    if "fms" in chosen:
        _run_fms(fms_data, out, console)


def _chosen(only: list[str] | None) -> tuple[str, ...]:
    names = tuple(only or BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        raise CliError(f"unknown benchmark {', '.join(unknown)}: choose among zeus, fms")
    return names


def _run_zeus(
    data: Path | None, gpus: list[str] | None, out: Path | None, console: Console
) -> None:
    zeus = _module("discospace.explorer.bench.zeus")
    if zeus is None:
        raise CliError("the Zeus benchmark needs the discospace-explorer package installed")
    kwargs: dict[str, Any] = {"data_dir": data}
    if gpus:
        kwargs["gpus"] = tuple(g.lower() for g in gpus)
    _report(lambda: zeus.run(**kwargs), out, console)


def _run_fms(data: Path | None, out: Path | None, console: Console) -> None:
    fms = _module("discospace.explorer.bench.fms")
    if fms is None or not hasattr(fms, "run"):
        console.print("fms benchmark: not yet available in this installation (skipped)")
        return
    _report(lambda: fms.run(data), out, console)


def _report(benchmark: Callable[[], Any], out: Path | None, console: Console) -> None:
    from discospace.explorer.bench.common import print_result, write_result

    try:
        result = benchmark()
    except (TraceDataMissingError, ZeusTraceError) as error:
        raise CliError(str(error)) from None
    print_result(result, console)
    console.print(f"wrote {write_result(result, out)}")


def _module(name: str) -> ModuleType | None:
    """The module, or None when it (or its package) is not installed."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            return None
        raise
