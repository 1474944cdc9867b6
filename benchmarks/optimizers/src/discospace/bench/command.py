"""What `discospace bench optimizers` runs: each chosen benchmark, its tables printed and its
JSON written (`common.write_result`).

Results are written as they come: each benchmark tells a `common.ResultFile` every part it
finishes (a Zeus workload, an fms method), which writes the result so far at once and shows a
progress line, so a crash or Ctrl-C keeps every part done (and says so). A rerun starts over: it
first says what the file held (a finished or an unfinished run, how much of it), then replaces
it as it goes.

The fms part runs on the default table (`--fms-data`), or on every table `fms_tables` names (a
file, a folder of `*.csv` files, or a glob pattern), each written as `fms-<file stem>.json`.
Every input is read and checked before any benchmark runs or anything is written: every fms
table, the Zeus traces of the chosen GPUs (and of the GPUs of `zeus-robust`), and the results
folder (made, written in, no folder where a result file goes: `common.ready`).

The CLI imports this module only when the command is called, so the CLI needs neither this
package nor the services it benchmarks for anything else. `USER_ERRORS` are the errors a user
can meet (a missing trace file or GPU, a trace that cannot be simulated, a table without a
needed column or with a bad cell, a pattern matching no table, an unknown benchmark name, a
result that cannot be written); each is one sentence.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from discospace.bench.common import (
    BenchResult,
    Progress,
    ResultFile,
    ResultWriteError,
    earlier_run,
    print_result,
    ready,
    result_path,
    write_file,
    write_result,
)
from discospace.bench.zeus_upstream import ZeusUnavailableError
from discospace.traces.data import TraceDataMissingError
from discospace.traces.fms import FmsTableError
from discospace.traces.zeus import ZeusTraceError

BENCHMARKS = ("zeus", "zeus-robust", "fms", "fms-cross-space")
GLOB_CHARACTERS = frozenset("*?[")


class UnknownBenchmarkError(ValueError):
    """A benchmark name that is not one of `BENCHMARKS`."""


class TableChoiceError(ValueError):
    """`--fms-table` names no table, or two tables whose results would share a file."""


USER_ERRORS: tuple[type[Exception], ...] = (
    TraceDataMissingError,
    ZeusTraceError,
    FmsTableError,
    TableChoiceError,
    UnknownBenchmarkError,
    ZeusUnavailableError,
    ResultWriteError,
)
Job = Callable[[Progress], BenchResult]


def run(
    names: Sequence[str],
    *,
    zeus_data: Path | None = None,
    fms_data: Path | None = None,
    fms_tables: Sequence[Path | str] = (),
    gpus: Sequence[str] = (),
    out: Path | None = None,
    console: Console | None = None,
) -> list[Path]:
    """Run the benchmarks in `names` (all when empty), print them; the JSON files written."""
    chosen = _chosen(names)
    shown = console or Console()
    jobs: list[tuple[str, Job]] = []
    if "zeus" in chosen:
        jobs.append(("zeus", partial(_zeus, zeus_data, gpus)))
    if "zeus-robust" in chosen:
        jobs.append(("zeus-robust", partial(_zeus_robust, zeus_data, out)))
    if "fms" in chosen:
        jobs += _fms_jobs(fms_data, fms_tables)
    if "fms-cross-space" in chosen:
        jobs += _fms_jobs(fms_data, fms_tables, _cross_space, "fms-cross-space")
    _check_zeus(chosen, zeus_data, gpus)
    outputs = [result_path(name, out) for name, _ in jobs]
    if "zeus-robust" in chosen:
        outputs.append(_markdown(result_path("zeus-robust", out)))
    ready(outputs)
    files = ResultFile(out, shown)
    return [_report(name, job, files) for name, job in jobs]


def _chosen(names: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(names) or BENCHMARKS
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        raise UnknownBenchmarkError(
            f"unknown benchmark {', '.join(unknown)}: choose among {', '.join(BENCHMARKS)}"
        )
    return chosen


def _check_zeus(chosen: Sequence[str], data: Path | None, gpus: Sequence[str]) -> None:
    """Read and check now the Zeus traces the chosen benchmarks will read."""
    from discospace.bench import zeus

    if "zeus" in chosen:
        zeus.load_traces(data, _gpu_names(gpus, data))
    if "zeus-robust" in chosen:
        from discospace.bench import zeus_robust

        zeus.load_traces(data, zeus_robust.GPUS)


def _gpu_names(gpus: Sequence[str], data: Path | None = None) -> tuple[str, ...]:
    """Each GPU once, named as its power trace is (`summary_power_<name>.csv`): a name given in
    another case is the trace's where only one trace matches it ignoring case (`--gpu A40` reads
    `summary_power_a40.csv`; `--gpu a40` read no `summary_power_A40.csv`)."""
    from discospace.traces.data import TraceDataMissingError
    from discospace.traces.zeus import available_gpus

    try:
        traces = available_gpus(data)
    except TraceDataMissingError:  # load_traces says where it looked
        traces = ()
    named = []
    for gpu in gpus:
        alike = [trace for trace in traces if trace.lower() == gpu.lower()]
        name = gpu if gpu in traces or len(alike) != 1 else alike[0]
        named.append(name if name in traces else name.lower())
    return tuple(dict.fromkeys(named))


def _zeus(data: Path | None, gpus: Sequence[str], progress: Progress) -> BenchResult:
    from discospace.bench import zeus

    kwargs: dict[str, Any] = {"data_dir": data, "progress": progress}
    if gpus:
        kwargs["gpus"] = _gpu_names(gpus, data)
    return zeus.run(**kwargs)


def _zeus_robust(data: Path | None, out: Path | None, progress: Progress) -> BenchResult:
    """The robust posterior and the cross-GPU warm start beside Zeus's own simulator; its
    tables also as `zeus-robust.md` beside the JSON (committed, unlike the JSON)."""
    from discospace.bench import zeus_robust

    result = zeus_robust.run(data, progress=progress)
    write_file(_markdown(result_path(result.name, out)), zeus_robust.markdown(result))
    return result


def _markdown(path: Path) -> Path:
    """Where the tables of the result file `path` are written as markdown."""
    return path.with_suffix(".md")


def _fms_jobs(
    data: Path | None,
    tables: Sequence[Path | str],
    bench: Callable[[Path | None, Path | None, str, Progress], BenchResult] | None = None,
    prefix: str = "fms",
) -> list[tuple[str, Job]]:
    """One job per table (the default one when `tables` is empty), every table checked now:
    `bench` (default: the methods on the whole table) named `<prefix>-<table stem>`."""
    from discospace.bench import fms

    bench = bench or _fms
    if not tables:
        fms.read_table(fms.fms.table_path(data))
        return [(prefix, partial(bench, data, None, prefix))]
    paths = table_paths(tables)
    for path in paths:
        fms.read_table(path)
    return [(f"{prefix}-{p.stem}", partial(bench, None, p, f"{prefix}-{p.stem}")) for p in paths]


def _fms(data: Path | None, table: Path | None, name: str, progress: Progress) -> BenchResult:
    from discospace.bench import fms

    return fms.run(data, table=table, name=name, progress=progress)


def _cross_space(
    data: Path | None, table: Path | None, name: str, progress: Progress
) -> BenchResult:
    """Each model's sub-space searched cold, and warm from the other models' results."""
    from discospace.bench import fms_cross_space

    return fms_cross_space.run(data, table=table, name=name, progress=progress)


def table_paths(given: Sequence[Path | str]) -> list[Path]:
    """The tables `given` names, in order: a file as it is, a folder's `*.csv` files, a glob
    pattern's files. `TableChoiceError` when one names nothing, or two share a file stem."""
    paths: list[Path] = []
    for spec in given:
        found = _tables_of(str(spec))
        if not found:
            raise TableChoiceError(
                f"no table matches {spec} (give a CSV file, a folder or a glob)."
            )
        paths += [p for p in found if p not in paths]
    stems: dict[str, Path] = {}
    for path in paths:
        if path.stem in stems:
            raise TableChoiceError(
                f"the tables {stems[path.stem]} and {path} would both be written as "
                f"fms-{path.stem}.json: rename one."
            )
        stems[path.stem] = path
    return paths


def _tables_of(spec: str) -> list[Path]:
    """A folder's tables, a file (also one that is absent: reading it says so), or a glob's."""
    path = Path(spec)
    if path.is_dir():
        return sorted(p for p in path.glob("*.csv") if p.is_file())
    if path.exists() or not GLOB_CHARACTERS & set(spec):
        return [path]
    return sorted(Path(p) for p in glob.glob(spec) if Path(p).is_file())


def _report(name: str, job: Job, files: ResultFile) -> Path:
    """Run one benchmark, its results written as they come; then its tables and its file."""
    earlier = earlier_run(result_path(name, files.folder))
    if earlier is not None:
        files.console.print(earlier, markup=False, highlight=False)
    try:
        result = job(files.update)
    except BaseException:
        kept = files.stopped(name)
        if kept is not None:
            files.console.print(kept, markup=False, highlight=False)
        raise
    print_result(result, files.console)
    path = write_result(result, files.folder)
    files.console.print(f"wrote {path}", markup=False, highlight=False)
    return path
