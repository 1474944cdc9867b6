"""``discospace bench optimizers``: the optimizer benchmarks, in process, on published tables.

Runs the Zeus batch-size optimizer on the Zeus NSDI'23 traces and the model-based optimizers on
the fms-acceleration table, prints their tables and writes each as JSON under
``benchmarks/results/`` (or ``--out``), each workload's result as soon as it is done. The data
paths are options, so any trace in the same format can be benchmarked: any GPU with a Zeus power
trace file (``--gpu``), any fms table with the needed columns (``--fms-table``). No broker needed.

The benchmarks are their own package (``discospace-bench``, ``benchmarks/optimizers/``), which
depends on the explorer: it is imported only when the command is called, so the CLI depends on
no service package.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from discospace.cli.errors import CliError, nearest_existing

bench_app = typer.Typer(
    rich_markup_mode=None,
    help="Benchmarks that run in process on published measurements.",
    no_args_is_help=True,
)

WIDE = 200
NOT_INSTALLED = (
    "the optimizer benchmarks are the discospace-bench package, which is not installed: "
    "install it with `.venv/bin/pip install -e benchmarks/optimizers` (or `make test-setup`)"
)


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
    fms_tables: Annotated[
        list[str] | None,
        typer.Option(
            "--fms-table",
            help="fms tables to run instead of a100_80gb.csv (repeatable): a CSV file of any "
            "name with the needed columns, a folder of them, or a glob; each written as "
            "fms-<file stem>.json.",
            show_default=False,
        ),
    ] = None,
    gpus: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu",
            help="Zeus power traces to use (repeatable): any GPU with a "
            "summary_power_<gpu>.csv in the Zeus folder. Default: every one there.",
            show_default=False,
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only",
            help="Run only these benchmarks (repeatable): zeus, zeus-robust, fms, fms-cross-space.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for the JSON results. Default: benchmarks/results/."),
    ] = None,
) -> None:
    """Benchmark the optimizers on published traces; print the tables and write JSON."""
    if out is not None:
        _writable(out)
    try:
        from discospace.bench import command
    except ModuleNotFoundError as error:
        raise _missing(error) from None
    try:
        command.run(
            only or (),
            zeus_data=zeus_data,
            fms_data=fms_data,
            fms_tables=fms_tables or (),
            gpus=gpus or (),
            out=out,
            console=Console(width=WIDE),
        )
    except command.USER_ERRORS as error:
        raise CliError(str(error)) from None


def _writable(folder: Path) -> None:
    """Refuse, before any benchmark runs, a results folder that could not be made or written
    (nothing is created here: a refused table leaves no folder behind)."""
    existing = nearest_existing(folder)
    if not existing.is_dir():
        raise CliError(f"--out {folder}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CliError(f"--out {folder}: this user cannot write in {existing}")


def _missing(error: ModuleNotFoundError) -> Exception:
    """A `CliError` saying how to install the benchmarks when they are what is missing; any
    other missing module is a bug, raised as it is."""
    if error.name in ("discospace.bench", "discospace.bench.command"):
        return CliError(NOT_INSTALLED)
    return error
