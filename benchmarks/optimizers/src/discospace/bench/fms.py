"""Sample efficiency on the fms-acceleration A100 table: how many measurements to near the best.

Any table with the columns `discospace.traces.fms.NEEDED` works the same way (`run(table=PATH)`,
`read_table`); one without a valid row is refused. Each method's result is told to `progress`
as soon as it is done (the command writes it at once and shows a line).

The space is every configuration of the table (`a100_80gb.csv`): model, number of GPUs,
per-device batch size, framework config and PEFT method (124 rows; the table covers only part
of the product of those values, so the operators search among its rows with the `candidates`
option). Measuring a configuration reads its row: `train_tokens_per_second`, or an invalid
result when the run did not finish (out of memory), which optimizers take as a violated
constraint. The objective is the largest tokens per second.

For each seed and method the figure is the number of measurements until the best valid result
so far is within 5% of the table's best: the Optuna operators (`optuna_tpe`, `optuna_gp`) run
through the explorer's engine in process (`harness.py`, the same decisions as in the services)
and stop at that target; random sampling without replacement measures the rows in a seeded
random order. Invalid configurations tried on the way are counted too. With a warm start, a
seeded random half of the table is in the sample store beforehand (the same half for every
method of a seed): the optimizers are told it before their first ask, random sampling draws from
the other half, and a run whose half already holds a result within 5% needs 0 measurements.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from discospace.bench.common import BenchResult, Progress, ResultTable
from discospace.bench.harness import Measured, Prior, run_operation, space_event
from discospace.core import (
    Entity,
    ExperimentRef,
    ExperimentSpec,
    InvalidMeasurement,
    ParameterizedExperiment,
    PropertySpec,
    SpaceSpec,
    ValidMeasurement,
)
from discospace.core.experiment import parameterized_experiment_id
from discospace.events import (
    Objective,
    OperationCompleted,
    OperationParameters,
    SpaceRegistered,
    StoppingRules,
)
from discospace.explorer.operators.optuna_search.samplers import missing_packages
from discospace.traces import fms
from discospace.traces.fms import FmsTableError

SEEDS = tuple(range(20))
FIXED_START = {
    "optuna_tpe (start-up 10)": ("optuna_tpe", {"n_startup_trials": 10}),
    "optuna_gp (start-up 10)": ("optuna_gp", {"n_startup_trials": 10}),
}
"""TPE and GP as Optuna sets them (10 random trials first), beside the default operators, whose
start-up is adapted to the space (the small-space strategy)."""
METHODS = ("random", "optuna_tpe", "optuna_gp", *FIXED_START)
WITHIN = 0.05
PROPERTIES = ("model", "num_gpus", "per_device_train_batch_size", "framework_config", "peft_method")
TARGET = "train_tokens_per_second"
EXPERIMENT = ExperimentSpec(
    actuator="fms-table",
    experiment="fms-a100-finetune",
    description="Reads a configuration's row of the fms-acceleration A100-80GB table.",
    target_properties=(TARGET,),
    required_properties=PROPERTIES,
)
STARTS = ("cold", "warm", "warm, best hidden")
"""Empty store; a seeded random half of the table known; a seeded random half of the rows that
are not within 5% of the best known (so the warm start cannot have found the answer already)."""


@dataclass(frozen=True)
class Table:
    """The fms table as a space: rows by entity id, and the best valid throughput."""

    rows: dict[str, dict[str, Any]]
    """Entity id -> constitutive values, `throughput` (NaN when invalid) and `runtime` (s)."""
    event: SpaceRegistered

    @property
    def best(self) -> float:
        return max(r["throughput"] for r in self.rows.values() if math.isfinite(r["throughput"]))

    @property
    def target(self) -> float:
        return (1 - WITHIN) * self.best

    def values(self, entity_id: str) -> dict[str, Any]:
        return {name: self.rows[entity_id][name] for name in PROPERTIES}

    def points(self) -> list[dict[str, Any]]:
        return [self.values(entity_id) for entity_id in self.rows]

    def result(self, entity_id: str) -> Measured:
        """A row as a measurement: its throughput, or invalid (it ran out of memory)."""
        row = self.rows[entity_id]
        runtime = row["runtime"] if math.isfinite(row["runtime"]) else 0.0
        if not math.isfinite(row["throughput"]):
            return Measured(InvalidMeasurement(reason="out of memory"), runtime)
        return Measured(ValidMeasurement(values={TARGET: row["throughput"]}), runtime)

    def measure(self, entity: Entity, experiment: ParameterizedExperiment) -> Measured:
        return self.result(entity.id)

    def valid(self, entity_id: str) -> bool:
        return math.isfinite(self.rows[entity_id]["throughput"])

    def near_best(self, entity_id: str) -> bool:
        return self.valid(entity_id) and self.rows[entity_id]["throughput"] >= self.target


def table_of(frame: pd.DataFrame) -> Table:
    """The benchmark's space and rows from a table in the `discospace.traces.fms` format."""
    properties = tuple(
        PropertySpec(name=name, values=tuple(sorted(frame[name].unique().tolist())))
        for name in PROPERTIES
    )
    reference = ExperimentRef(actuator=EXPERIMENT.actuator, experiment=EXPERIMENT.experiment)
    spec = SpaceSpec(
        sample_store="fms-a100-bench", entity_space=properties, measurement_space=(reference,)
    )
    rows: dict[str, dict[str, Any]] = {}
    first_row: dict[str, int] = {}
    for number, record in enumerate(frame.to_dict("records"), start=1):
        values = {name: record[name] for name in PROPERTIES}
        measured = {
            "throughput": float(record["throughput"]),
            "runtime": float(record["train_runtime"]),
        }
        entity_id = Entity.of(values).id
        if entity_id in rows:  # the last row won in silence: another best than the table's
            shown = ", ".join(f"{name}={values[name]}" for name in PROPERTIES)
            raise FmsTableError(
                f"Data rows {first_row[entity_id]} and {number} of the table are one "
                f"configuration of the benchmark's space ({shown}; it has no "
                f"{', '.join(c for c in fms.CONFIGURATION if c not in PROPERTIES)}): give each "
                "configuration once."
            )
        first_row[entity_id] = number
        rows[entity_id] = {**values, **measured}
    return Table(rows, space_event(spec, (EXPERIMENT,)))


def read_table(path: Path) -> Table:
    """The benchmark's table from the CSV file `path` (any name). `FmsTableError` names a
    missing column, or says that no row has a throughput (there is no best to approach)."""
    frame = fms.load_table(path)
    if not frame["validity"].any():
        raise FmsTableError(f"No row of the table {path} has a train_tokens_per_second.")
    return table_of(frame)


@dataclass(frozen=True)
class SeedRun:
    """One method, one start, one seed."""

    method: str
    start: str
    seed: int
    measurements: int
    """Measurements until the best so far was within 5% of the table's best."""
    invalid: int
    """Invalid configurations measured on the way."""
    at_start: bool
    """The warm-start half already held a result within 5% (0 measurements needed)."""


def warm_half(table: Table, seed: int, hide_best: bool = False) -> list[str]:
    """The seeded random half of the table measured before a warm start (drawn among the rows
    not within 5% of the best when `hide_best`)."""
    ids = sorted(table.rows)
    pool = [i for i in ids if not (hide_best and table.near_best(i))]
    return random.Random(f"fms-warm-{seed}").sample(pool, len(ids) // 2)


def run_random(table: Table, *, seed: int, known: Sequence[str]) -> SeedRun:
    """Random sampling without replacement over the rows not known yet."""
    start = "warm" if known else "cold"
    if any(table.near_best(i) for i in known):
        return SeedRun("random", start, seed, 0, 0, True)
    order = sorted(set(table.rows) - set(known))
    random.Random(f"fms-random-{seed}").shuffle(order)
    invalid = 0
    for count, entity_id in enumerate(order, start=1):
        invalid += not table.valid(entity_id)
        if table.near_best(entity_id):
            return SeedRun("random", start, seed, count, invalid, False)
    raise AssertionError("the table's best row is always reached")


def run_optimizer(
    table: Table,
    *,
    operator: str,
    seed: int,
    known: Sequence[str],
    options: Mapping[str, Any] | None = None,
    elsewhere: Sequence[Prior] = (),
) -> SeedRun:
    """An Optuna operator through the explorer's engine, stopped at the 5% target.

    `options` are added to the operator's (`candidates` and `warm_start` are set here);
    `elsewhere` are results outside the table's space already in the store, before `known`.
    """
    start = "warm" if known else "cold"
    if any(table.near_best(i) for i in known):
        return SeedRun(operator, start, seed, 0, 0, True)
    parameters = OperationParameters(
        batch_size=1,
        seed=seed,
        objective=Objective(property=TARGET, direction="max"),
        stopping=StoppingRules(target_value=table.target),
        options={**(options or {}), "candidates": table.points(), "warm_start": True},
    )
    prior = [*elsewhere, *(prior_of(table, i) for i in known)]
    record = run_operation(table.event, operator, parameters, table.measure, prior=prior)
    ended = record.ended
    if not isinstance(ended, OperationCompleted) or ended.stop_reason != "target_reached":
        raise AssertionError(f"{operator} did not reach the target: {ended}")
    measured = [o for o in record.outcomes if not o.reused]
    invalid = sum(not o.is_valid for o in measured)
    return SeedRun(operator, start, seed, len(measured), invalid, False)


def prior_of(table: Table, entity_id: str) -> Prior:
    """A row of the table as a result already in the store."""
    experiment_id = parameterized_experiment_id(EXPERIMENT.experiment, {})
    return Prior(table.values(entity_id), experiment_id, table.result(entity_id))


def run_method(table: Table, method: str, seed: int, start: str) -> SeedRun:
    known = warm_half(table, seed, hide_best=start != "warm") if start != "cold" else []
    if method == "random":
        return replace(run_random(table, seed=seed, known=known), start=start)
    operator, options = FIXED_START.get(method, (method, {}))
    run = run_optimizer(table, operator=operator, seed=seed, known=known, options=options)
    return replace(run, method=method, start=start)


def random_expectation(table: Table) -> tuple[float, int]:
    """Mean and median measurements random sampling without replacement needs from an empty
    store, exactly: with n rows of which k are within 5%, P(more than m) = C(n-k, m) / C(n, m)."""
    n = len(table.rows)
    k = sum(table.near_best(i) for i in table.rows)
    median = next(m for m in range(1, n + 1) if math.comb(n - k, m) / math.comb(n, m) <= 0.5)
    return (n + 1) / (k + 1), median


def unavailable(method: str) -> str | None:
    """Why a method cannot run here (its sampler's packages are missing), or None."""
    operator = FIXED_START.get(method, (method, {}))[0]
    if operator == "optuna_gp" and missing_packages("gp"):
        return f"needs {', '.join(missing_packages('gp'))} (the explorer's 'gp' extra)"
    return None


COLUMNS = (
    "method",
    "start",
    "median measurements",
    "mean",
    "worst",
    "x random",
    "median invalid tried",
    "seeds done at start",
    "median of the others",
)


def run(
    data_dir: Path | None = None,
    seeds: Sequence[int] = SEEDS,
    methods: Sequence[str] = METHODS,
    *,
    table: Path | None = None,
    name: str = "fms",
    progress: Progress | None = None,
) -> BenchResult:
    """The fms benchmark: measurements to within 5% of the best tokens per second.

    `table` is any CSV file with the needed columns; without it, `a100_80gb.csv` in
    `data_dir` (the fms folder or the data folder holding `fms-acceleration-a100/`; default:
    the shared data folder). `methods` are `random` and Optuna operator names (`optuna_tpe`,
    `optuna_gp`); one whose packages are missing is reported as not run. Seeds 0 to 19 by
    default; each method runs cold (empty store) and warm (half the table known). `name`
    names the result (its file); `progress` is told the result after each method.
    """
    path = table if table is not None else fms.table_path(data_dir)
    rows = read_table(path)
    runs: list[SeedRun] = []
    skipped: dict[str, str] = {}
    for done, method in enumerate(methods, start=1):
        started = time.perf_counter()
        reason = unavailable(method)
        if reason is not None:
            skipped[method] = reason
        else:
            runs += [run_method(rows, method, s, start) for start in STARTS for s in seeds]
        if progress is not None:
            line = _progress_line(path, method, (done, len(methods)), runs, skipped)
            seconds = time.perf_counter() - started
            so_far = _result(name, path, rows, seeds, (methods, done), runs, skipped)
            progress(so_far, f"{line} ({seconds:.1f} s)")
    return _result(name, path, rows, seeds, (methods, len(methods)), runs, skipped)


def _result(
    name: str,
    path: Path,
    table: Table,
    seeds: Sequence[int],
    methods_done: tuple[Sequence[str], int],
    runs: list[SeedRun],
    skipped: dict[str, str],
) -> BenchResult:
    """The result once the first `done` of `methods` have run."""
    methods, done = methods_done
    return BenchResult(
        name=name,
        settings={
            "table": str(path),
            "seeds": list(seeds),
            "methods": list(methods),
            "within": WITHIN,
            "configurations": len(table.rows),
            "invalid_configurations": sum(not table.valid(i) for i in table.rows),
            "best_tokens_per_second": table.best,
            "batch_size": 1,
        },
        tables=[_table(runs, methods[:done], skipped, path.stem)],
        details={"runs": [asdict(r) for r in runs], "not_run": skipped},
        notes=[_random_note(table), *_notes(runs, skipped)],
        complete=done == len(methods),
        progress=f"{done} of {len(methods)} methods",
    )


def _progress_line(
    path: Path,
    method: str,
    count: tuple[int, int],
    runs: Sequence[SeedRun],
    skipped: dict[str, str],
) -> str:
    head = f"fms {path.stem}: {method}"
    if method in skipped:
        return f"{head} not run ({count[0]}/{count[1]} methods): {skipped[method]}"
    medians = "; ".join(f"{start} {_median(runs, method, start):g}" for start in STARTS)
    return f"{head} done ({count[0]}/{count[1]} methods): median measurements {medians}"


def _median(runs: Sequence[SeedRun], method: str, start: str) -> float | None:
    chosen = [r.measurements for r in runs if r.method == method and r.start == start]
    return float(statistics.median(chosen)) if chosen else None


def _table(
    runs: Sequence[SeedRun], methods: Sequence[str], skipped: dict[str, str], label: str
) -> ResultTable:
    seeds = len({r.seed for r in runs})
    title = f"fms {label}: measurements to within {WITHIN:.0%} of the best tokens/s ({seeds} seeds)"
    table = ResultTable(title, COLUMNS)
    for method in methods:
        for start in STARTS:
            if method in skipped:
                table.add(method, start, *([None] * 5), f"not run: {skipped[method]}", None)
                continue
            table.add(*_row(runs, method, start))
    return table


def _row(runs: Sequence[SeedRun], method: str, start: str) -> tuple[Any, ...]:
    chosen = [r for r in runs if r.method == method and r.start == start]
    counts = [r.measurements for r in chosen]
    median = statistics.median(counts)
    baseline = _median(runs, "random", start)
    ratio = median / baseline if baseline else None
    invalid = statistics.median(r.invalid for r in chosen)
    done = sum(r.at_start for r in chosen)
    others = [r.measurements for r in chosen if not r.at_start]
    rest = statistics.median(others) if others else None
    mean = statistics.fmean(counts)
    return (method, start, median, mean, max(counts), ratio, invalid, done, rest)


def _random_note(table: Table) -> str:
    mean, median = random_expectation(table)
    near = sum(table.near_best(i) for i in table.rows)
    return (
        f"random sampling without replacement from an empty store, exactly ({near} of "
        f"{len(table.rows)} rows within {WITHIN:.0%}): mean {mean:.1f}, median {median}"
    )


def _small_space_note(runs: Sequence[SeedRun]) -> list[str]:
    """The small-space target: the default `optuna_tpe` at most random's median, and at most
    half of it where random needs 20 or more."""
    tpe, random_cold = _median(runs, "optuna_tpe", "cold"), _median(runs, "random", "cold")
    if tpe is None or random_cold is None:
        return []
    bound = random_cold / 2 if random_cold >= 20 else random_cold
    met = "met" if tpe <= bound else "NOT met"
    return [
        f"small-space target (default optuna_tpe, adapted start-up): median {tpe:g} vs random "
        f"{random_cold:g}, at most {bound:g}: {met}"
    ]


def _notes(runs: Sequence[SeedRun], skipped: dict[str, str]) -> list[str]:
    notes = [f"{method} not run: {reason}" for method, reason in skipped.items()]
    notes += _small_space_note(runs)
    random_cold = _median(runs, "random", "cold")
    for method in sorted({r.method for r in runs} - {"random"}):
        cold, warm = _median(runs, method, "cold"), _median(runs, method, "warm")
        hidden = _median(runs, method, STARTS[2])
        if cold is None or warm is None or hidden is None or random_cold is None:
            continue
        half = "met" if cold <= random_cold / 2 else "NOT met"
        cut = "met" if warm < cold and hidden < cold else "NOT met"
        notes.append(
            f"{method}: median {cold:g} cold vs random {random_cold:g} (target <= half of "
            f"random: {half}); warm start {warm:g}, best hidden {hidden:g} (target < cold: {cut})"
        )
    return notes
