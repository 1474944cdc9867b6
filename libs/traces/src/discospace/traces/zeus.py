"""The Zeus NSDI'23 traces as a simulator of "train to the target metric" on one GPU.

Two tables, as the paper's trace-driven simulator reads them:

- the *train trace* (`summary_train.csv`): per workload (dataset, network), batch size and seed
  `run`, the epoch at which the target validation metric was reached (NaN: never). Only the rows
  at the workload's job target metric count; each is one possible training run;
- the *power trace* (`summary_power_<gpu>.csv`): per workload, batch size and power limit, the
  seconds per epoch and the mean GPU watts. Deterministic.

One run at (batch size b, power limit p) trains `e` epochs: its `target_epoch` when that is
known and at most the job's `max_epochs` (it converged), else `max_epochs` (it failed, having
paid for every epoch). Time `T = e * time_per_epoch(b, p)`, energy `E = T * average_power(b, p)`
and the Zeus cost `eta * E + (1 - eta) * max_power * T`.

`max_power` is the GPU's highest power limit in its power trace, times the number of GPUs of the
job: the traces were measured on one GPU (mean power never exceeds one GPU's limit), so every
workload here is a one-GPU job and `max_power` is 250 W on V100 and 300 W on A40, as in the
paper's simulator.

The job defaults (target metric, max epochs, default batch size) are the paper's; the default
batch size is capped at the largest batch size of the workload in that GPU's power trace (GPUs
with less memory fit smaller batches), as the paper's artifact does (and is the largest of the
job's batch sizes not above the paper's, so that it is one the job has).

Any GPU is one power trace file (`summary_power_<gpu>.csv`): `available_gpus(folder)` lists those
a folder holds (the published V100 and A40 first). A batch size may lack rows for some power
limits (a user's own trace, measured in part): those (batch size, power limit) combinations are
unavailable (`unavailable`), the others are `configurations`, and a batch size's power limits are
`power_limits_at` (what profiling covers).

`ZeusTrace.load` checks both files before it indexes them (`ZeusTraceError`, one sentence naming
the file, and the data row and column of a bad cell): each is a readable CSV file with the
columns of `TRAIN_COLUMNS` or `POWER_COLUMNS` and at least one row; batch sizes and power limits
are whole numbers of at least 1, seconds per epoch and watts finite numbers above 0, a
`target_epoch` a finite number above 0 or empty/"nan" (never reached). A trace that gives the
GPU no workload of the paper's jobs is refused too (a benchmark on it would report nothing).

Everything is pure pandas/numpy: randomness comes in as a `numpy.random.Generator`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from discospace.traces.cells import Number, numbers, read_cells
from discospace.traces.data import TraceDataMissingError, zeus_data_dir

GPUS: tuple[str, ...] = ("v100", "a40")
"""The GPUs of the published traces (any other GPU is the power trace file a folder holds)."""
TRAIN_FILE = "summary_train.csv"
_POWER_PREFIX, _POWER_SUFFIX = "summary_power_", ".csv"
_GPU_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_WHOLE = Number(whole=True)
TRAIN_COLUMNS: Mapping[str, Number | None] = {
    "dataset": None,
    "network": None,
    "batch_size": _WHOLE,
    "optimizer": None,
    "run": Number(whole=True, above=None),
    "target_metric": Number(above=None),
    "target_epoch": Number(missing=("", "nan"), missing_means="the target was never reached"),
}
"""The train trace's columns the simulator reads, and what a numeric one's cells hold."""
POWER_COLUMNS: Mapping[str, Number | None] = {
    "dataset": None,
    "network": None,
    "batch_size": _WHOLE,
    "optimizer": None,
    "power_limit": _WHOLE,
    "time_per_epoch": Number(),
    "average_power": Number(),
}
"""The power trace's columns, and what a numeric one's cells hold."""


def power_file(gpu: str) -> str:
    """The power trace file name of `gpu`."""
    return f"{_POWER_PREFIX}{gpu}{_POWER_SUFFIX}"


def zeus_folder(folder: Path | None = None) -> Path:
    """The folder holding the Zeus trace files: `folder` itself when it holds the train trace,
    else its Zeus trace folder (default `zeus_data_dir()`)."""
    if folder is not None and (folder / TRAIN_FILE).exists():
        return folder
    return zeus_data_dir(folder)


def available_gpus(folder: Path | None = None) -> tuple[str, ...]:
    """The GPUs with a power trace in the Zeus folder (see `zeus_folder`): the published ones
    first, then the others by name."""
    root = zeus_folder(folder)
    names = {
        path.name[len(_POWER_PREFIX) : -len(_POWER_SUFFIX)]
        for path in root.glob(power_file("*"))
        if path.is_file()
    }
    return (*(g for g in GPUS if g in names), *sorted(names - set(GPUS)))


class ZeusTraceError(ValueError):
    """A request the traces cannot answer; the message is one sentence."""


class UnknownConfigurationError(ZeusTraceError, LookupError):
    """A workload, batch size or power limit that the traces hold no row for."""


class Workload(NamedTuple):
    """A training workload of the traces: (dataset, network)."""

    dataset: str
    network: str

    def __str__(self) -> str:
        return f"{self.dataset}/{self.network}"


@dataclass(frozen=True)
class PaperJob:
    """The paper's job defaults for one dataset."""

    target_metric: float
    max_epochs: int
    default_batch_size: int
    lower_is_better: bool = False
    """The metric is an error (WER): `target_epoch` is when it first fell to the target."""


PAPER_JOBS: Mapping[str, PaperJob] = {
    "cifar100": PaperJob(0.6, 100, 1024),
    "imagenet": PaperJob(0.65, 100, 256),
    "squad": PaperJob(84.0, 6, 32),
    "librispeech": PaperJob(40.0, 16, 192, lower_is_better=True),
    "movielens-1m": PaperJob(0.41, 100, 1024),
    "sentiment140": PaperJob(0.84, 10, 128),
}
"""Target metric / max epochs / default batch size by dataset (the Zeus paper's jobs)."""

GPUS_PER_JOB = 1
"""Every trace was measured on one GPU, so `max_power` is one GPU's highest power limit."""


@dataclass(frozen=True)
class ZeusJob:
    """One workload's job on one GPU: its defaults and the knobs the traces cover."""

    workload: Workload
    optimizer: str
    target_metric: float
    max_epochs: int
    default_batch_size: int
    batch_sizes: tuple[int, ...]
    """Batch sizes with runs in the train trace and rows in this GPU's power trace."""
    power_limits: tuple[int, ...]
    max_power: float


@dataclass(frozen=True)
class RunOutcome:
    """What one training run costs at one (batch size, power limit)."""

    target_epoch: float
    """Epoch at which the run reached the target; NaN when it never did."""
    converged: bool
    """Reached the target within the job's `max_epochs`."""
    epochs: float
    """Epochs trained: `target_epoch` when converged, else `max_epochs`."""
    time_s: float
    energy_j: float
    average_power: float
    cost: float


@dataclass(frozen=True)
class OracleChoice:
    """The cheapest (batch size, power limit) of a workload in expectation."""

    batch_size: int
    power_limit: int
    expected_cost: float


def cost(eta: float, energy_j: float, time_s: float, max_power: float) -> float:
    """The Zeus cost: `eta * energy + (1 - eta) * max_power * time`."""
    if not 0.0 <= eta <= 1.0:
        raise ZeusTraceError(f"eta must lie in [0, 1], not {eta}.")
    return eta * energy_j + (1.0 - eta) * max_power * time_s


class ZeusTrace:
    """The train trace and one GPU's power trace, indexed for the simulator."""

    def __init__(
        self,
        gpu: str,
        jobs: Mapping[Workload, ZeusJob],
        runs: Mapping[tuple[Workload, int], tuple[float, ...]],
        power: Mapping[tuple[Workload, int, int], tuple[float, float]],
    ) -> None:
        self.gpu = gpu
        self._jobs = dict(jobs)
        self._runs = dict(runs)
        self._power = dict(power)

    @classmethod
    def load(cls, folder: Path | None = None, gpu: str = "v100") -> ZeusTrace:
        """Read the traces of `gpu` (any GPU with a power trace file) from `folder` (the Zeus
        trace folder, or the data folder that holds it; default `zeus_data_dir()`).
        `TraceDataMissingError` names an absent file, and the GPUs the folder has."""
        if not _GPU_NAME.fullmatch(gpu):
            raise ZeusTraceError(f"'{gpu}' is not a GPU name (letters, digits, '_', '.', '-').")
        root = zeus_folder(folder)
        power_path = root / power_file(gpu)
        if not power_path.is_file():
            there = ", ".join(available_gpus(root)) or "none"
            raise TraceDataMissingError(
                f"GPU '{gpu}' has no Zeus power trace: {power_path} does not exist "
                f"(power traces there: {there})."
            )
        train = _checked(root / TRAIN_FILE, "Zeus train trace", TRAIN_COLUMNS)
        power = _checked(power_path, "Zeus power trace", POWER_COLUMNS)
        _check_unrepeated(power, power_path)
        _check_unrepeated(train, root / TRAIN_FILE, _TRAIN_KEY, "train")
        trace = cls.from_frames(train, power, gpu)
        if not trace.workloads:
            raise ZeusTraceError(
                f"The Zeus traces in {root} give {gpu} no workload: no dataset of the paper's "
                f"jobs ({', '.join(PAPER_JOBS)}) has runs at its target metric in {TRAIN_FILE} "
                f"and rows in {power_path.name} for the same network and optimizer."
            )
        return trace

    @classmethod
    def from_frames(
        cls,
        train: pd.DataFrame,
        power: pd.DataFrame,
        gpu: str,
        paper_jobs: Mapping[str, PaperJob] = PAPER_JOBS,
    ) -> ZeusTrace:
        """Index a train table and a power table (the CSV columns) for `gpu`."""
        max_power = float(power["power_limit"].max()) * GPUS_PER_JOB
        jobs: dict[Workload, ZeusJob] = {}
        runs: dict[tuple[Workload, int], tuple[float, ...]] = {}
        table: dict[tuple[Workload, int, int], tuple[float, float]] = {}
        for workload in _workloads(train, power, paper_jobs):
            paper = paper_jobs[workload.dataset]
            job_train, job_power, optimizer = _job_rows(train, power, workload, paper)
            by_batch = _runs_by_batch_size(job_train)
            batch_sizes = tuple(sorted(set(by_batch) & set(job_power["batch_size"].astype(int))))
            if not batch_sizes:
                continue
            runs.update({(workload, b): by_batch[b] for b in batch_sizes})
            table.update(_power_rows(job_power, workload, batch_sizes))
            jobs[workload] = ZeusJob(
                workload=workload,
                optimizer=optimizer,
                target_metric=paper.target_metric,
                max_epochs=paper.max_epochs,
                default_batch_size=_default_batch_size(
                    paper.default_batch_size, int(job_power["batch_size"].max()), batch_sizes
                ),
                batch_sizes=batch_sizes,
                power_limits=tuple(sorted(int(p) for p in job_power["power_limit"].unique())),
                max_power=max_power,
            )
        return cls(gpu, jobs, runs, table)

    @property
    def workloads(self) -> tuple[Workload, ...]:
        """The workloads with a job on this GPU, sorted."""
        return tuple(sorted(self._jobs))

    def job(self, workload: Iterable[str]) -> ZeusJob:
        """The job of `workload` (a `Workload` or a (dataset, network) pair)."""
        key = Workload(*workload)
        if key not in self._jobs:
            raise UnknownConfigurationError(
                f"The Zeus traces hold no workload {key} for {self.gpu}."
            )
        return self._jobs[key]

    def batch_sizes(self, workload: Iterable[str]) -> tuple[int, ...]:
        return self.job(workload).batch_sizes

    def power_limits(self, workload: Iterable[str]) -> tuple[int, ...]:
        return self.job(workload).power_limits

    def max_power(self, workload: Iterable[str]) -> float:
        return self.job(workload).max_power

    def power_limits_at(self, workload: Iterable[str], batch_size: int) -> tuple[int, ...]:
        """The power limits the power trace holds a row for at this batch size, ascending."""
        job = self.job(workload)
        return tuple(
            p for p in job.power_limits if (job.workload, int(batch_size), p) in self._power
        )

    def configurations(self, workload: Iterable[str]) -> tuple[tuple[int, int], ...]:
        """Every (batch size, power limit) the power trace holds a row for, by batch size then
        power limit."""
        job = self.job(workload)
        return tuple((b, p) for b in job.batch_sizes for p in self.power_limits_at(job.workload, b))

    def unavailable(self, workload: Iterable[str]) -> tuple[tuple[int, int], ...]:
        """The (batch size, power limit) combinations of the job without a power row: no policy
        may run them (the oracle, random choice and profiling skip them)."""
        job = self.job(workload)
        held = set(self.configurations(job.workload))
        return tuple(
            (b, p) for b in job.batch_sizes for p in job.power_limits if (b, p) not in held
        )

    def time_per_epoch(self, workload: Iterable[str], batch_size: int, power_limit: int) -> float:
        """Seconds per epoch at (batch size, power limit)."""
        return self._power_row(workload, batch_size, power_limit)[0]

    def average_power(self, workload: Iterable[str], batch_size: int, power_limit: int) -> float:
        """Mean GPU watts at (batch size, power limit)."""
        return self._power_row(workload, batch_size, power_limit)[1]

    def runs(self, workload: Iterable[str], batch_size: int) -> tuple[float, ...]:
        """`target_epoch` of every seed run at this batch size, by run; NaN: never reached."""
        key = (self.job(workload).workload, int(batch_size))
        if key not in self._runs:
            raise UnknownConfigurationError(
                f"The Zeus train trace holds no run of {key[0]} at batch size {batch_size}."
            )
        return self._runs[key]

    def sample_run(
        self, workload: Iterable[str], batch_size: int, rng: np.random.Generator
    ) -> float:
        """The `target_epoch` of one run drawn uniformly with `rng` (NaN: never reached)."""
        runs = self.runs(workload, batch_size)
        return runs[int(rng.integers(len(runs)))]

    def outcome(
        self,
        workload: Iterable[str],
        batch_size: int,
        power_limit: int,
        target_epoch: float,
        eta: float = 0.5,
        max_epochs: int | None = None,
    ) -> RunOutcome:
        """What a run that reaches the target at `target_epoch` (NaN: never) costs."""
        job = self.job(workload)
        limit = job.max_epochs if max_epochs is None else max_epochs
        seconds, watts = self._power_row(job.workload, batch_size, power_limit)
        converged = not math.isnan(target_epoch) and target_epoch <= limit
        epochs = float(target_epoch) if converged else float(limit)
        time_s = epochs * seconds
        energy_j = time_s * watts
        return RunOutcome(
            target_epoch=float(target_epoch),
            converged=converged,
            epochs=epochs,
            time_s=time_s,
            energy_j=energy_j,
            average_power=watts,
            cost=cost(eta, energy_j, time_s, job.max_power),
        )

    def simulate(
        self,
        workload: Iterable[str],
        batch_size: int,
        power_limit: int,
        rng: np.random.Generator,
        eta: float = 0.5,
        max_epochs: int | None = None,
    ) -> RunOutcome:
        """One training run drawn with `rng`, and what it costs."""
        target_epoch = self.sample_run(workload, batch_size, rng)
        return self.outcome(workload, batch_size, power_limit, target_epoch, eta, max_epochs)

    def expected_cost(
        self,
        workload: Iterable[str],
        batch_size: int,
        power_limit: int,
        eta: float = 0.5,
        max_epochs: int | None = None,
    ) -> float:
        """Expected cost of training until one run converges: (mean cost of an attempt) divided
        by (the chance that an attempt converges), runs drawn uniformly; inf if none converges.

        Failed attempts pay `max_epochs` of training each; this is the expected total cost of
        retrying with fresh seeds until success (a geometric number of attempts)."""
        outcomes = [
            self.outcome(workload, batch_size, power_limit, epoch, eta, max_epochs)
            for epoch in self.runs(workload, batch_size)
        ]
        success = sum(o.converged for o in outcomes) / len(outcomes)
        if success == 0:
            return math.inf
        return float(np.mean([o.cost for o in outcomes])) / success

    def oracle(
        self, workload: Iterable[str], eta: float = 0.5, max_epochs: int | None = None
    ) -> OracleChoice:
        """The (batch size, power limit) of least expected cost (ties: smaller knobs first)."""
        job = self.job(workload)
        best = OracleChoice(job.batch_sizes[0], job.power_limits[0], math.inf)
        for b, p in self.configurations(job.workload):
            value = self.expected_cost(job.workload, b, p, eta, max_epochs)
            if value < best.expected_cost:
                best = OracleChoice(b, p, value)
        return best

    def _power_row(
        self, workload: Iterable[str], batch_size: int, power_limit: int
    ) -> tuple[float, float]:
        key = (self.job(workload).workload, int(batch_size), int(power_limit))
        if key not in self._power:
            raise UnknownConfigurationError(
                f"The {self.gpu} power trace holds no row for {key[0]} at batch size "
                f"{batch_size} and power limit {power_limit} W."
            )
        return self._power[key]


def _checked(path: Path, label: str, columns: Mapping[str, Number | None]) -> pd.DataFrame:
    """The trace file `path`, its numeric columns checked and typed (`ZeusTraceError`)."""
    cells = read_cells(path, label, tuple(columns), ZeusTraceError)
    rules = {name: rule for name, rule in columns.items() if rule is not None}
    return numbers(cells, rules, path, label, ZeusTraceError)


def _default_batch_size(paper: int, largest_measured: int, batch_sizes: tuple[int, ...]) -> int:
    """The paper's default capped at the largest batch size the power trace measured, then the
    largest of the job's batch sizes not above it (the smallest when none is)."""
    capped = min(paper, largest_measured)
    return max((b for b in batch_sizes if b <= capped), default=batch_sizes[0])


def _workloads(
    train: pd.DataFrame, power: pd.DataFrame, paper_jobs: Mapping[str, PaperJob]
) -> list[Workload]:
    pairs = set(zip(train["dataset"], train["network"], strict=True))
    pairs &= set(zip(power["dataset"], power["network"], strict=True))
    return sorted(Workload(d, n) for d, n in pairs if d in paper_jobs)


def _job_rows(
    train: pd.DataFrame, power: pd.DataFrame, workload: Workload, paper: PaperJob
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The workload's train rows at its target metric, its power rows with the same optimizer."""
    mine = (train["dataset"] == workload.dataset) & (train["network"] == workload.network)
    rows = train[mine & np.isclose(train["target_metric"].astype(float), paper.target_metric)]
    optimizers = sorted(set(train.loc[mine, "optimizer"].astype(str)))
    if len(optimizers) != 1:
        raise ZeusTraceError(
            f"The train trace of {workload} uses {len(optimizers)} optimizers; expected one."
        )
    optimizer = optimizers[0]
    mine_power = (power["dataset"] == workload.dataset) & (power["network"] == workload.network)
    return rows, power[mine_power & (power["optimizer"] == optimizer)], optimizer


def _runs_by_batch_size(rows: pd.DataFrame) -> dict[int, tuple[float, ...]]:
    ordered = rows.sort_values(["batch_size", "run"])
    epochs = pd.to_numeric(ordered["target_epoch"], errors="coerce").astype(float)
    return {
        int(b): tuple(float(e) for e in group)
        for b, group in epochs.groupby(ordered["batch_size"].astype(int), sort=True)
    }


def _power_rows(
    rows: pd.DataFrame, workload: Workload, batch_sizes: tuple[int, ...]
) -> dict[tuple[Workload, int, int], tuple[float, float]]:
    kept = rows[rows["batch_size"].astype(int).isin(batch_sizes)]
    return {
        (workload, int(b), int(p)): (float(t), float(w))
        for b, p, t, w in zip(
            kept["batch_size"],
            kept["power_limit"],
            kept["time_per_epoch"],
            kept["average_power"],
            strict=True,
        )
    }


_POWER_KEY = ("dataset", "network", "batch_size", "optimizer", "power_limit")
_TRAIN_KEY = ("dataset", "network", "batch_size", "optimizer", "run", "target_metric")


def _check_unrepeated(
    frame: pd.DataFrame, path: Path, key: tuple[str, ...] = _POWER_KEY, label: str = "power"
) -> None:
    """One row per `key` (a power row: workload, optimizer, batch size, power limit; a train
    row: workload, optimizer, batch size, run, target metric): a repeated power row would
    replace the first without a word, a repeated run count twice in the epochs to the target
    (the published traces repeat none)."""
    keys = frame[list(key)]
    repeated = keys.duplicated(keep=False)
    if not repeated.any():
        return
    first = keys[repeated].iloc[0]
    same = [int(i) + 1 for i in keys.index[(keys == first).all(axis=1)]]
    shown = ", ".join(f"{name} {value}" for name, value in zip(key, first, strict=True))
    raise ZeusTraceError(
        f"The Zeus {label} trace {path} gives {shown} in more than one row (data rows "
        f"{', '.join(map(str, same))}): give each configuration once."
    )
