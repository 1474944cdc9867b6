"""`zeus_bso` on the Zeus NSDI'23 traces, in process: the paper's trace-driven simulation.

Simulation rules (the Zeus simulator, ml-energy/zeus `zeus/simulate.py`, `simulate_one_job`):

- per workload and GPU, the paper's job (target metric, max epochs, default batch size capped at
  the largest batch size in that GPU's power trace) from `discospace.traces.zeus`; any GPU whose
  power trace file is in the folder (by default every one there);
- `eta` 0.5, `beta` 2, `2 * |B| * |P|` recurrences, seeds 0 to 9;
- a (batch size, power limit) the power trace has no row for is unavailable: random choice
  never draws it, profiling skips it, the oracle ignores it, and the recurrences count only the
  combinations there are; the notes say how many were unavailable per workload;
- a recurrence is attempted until one run converges; each run draws a training run (a seed of
  the train trace) uniformly; a run whose `target_epoch` is missing or above `max_epochs` pays
  `max_epochs` epochs and the recurrence is retried; early stopping ends a run before the epoch
  that would pass `beta * min_cost` (a run that cannot afford one epoch never starts);
- a batch size's first run profiles every power limit in its first epoch (that epoch costs the
  mean of the limits' epochs) and trains the remaining epochs at the cheapest limit.

The decisions are the `zeus_bso` operator's own, asked with views as the explorer asks it, its
run controls applied by the simulator (`zeus_sim.py`); randomness comes from the seed and the
run number only. Each workload's result is told to `progress` as soon as it is done (the
command writes it at once and shows a line).
Figures per workload: the final choice (the optimizer's pick at the end: best posterior mean),
its expected cost against the oracle's (the trace's cheapest configuration in expectation: mean
cost of an attempt divided by the chance of converging), the cumulative cost of every attempt
against `recurrences * oracle`, and the energy saving of the choice against the default batch
size at the highest power limit. Random choice draws a configuration uniformly for every attempt.

The operator runs with its default settings, the robust posterior (`zeus_robust.py` compares
it with Zeus's own). With `posterior: zeus`, the worst seed of a workload can end on a batch
size other than the cheapest: when the cheapest one's two pruning runs cost nearly the same
(both drew its slowest training run), its learned reward precision pins its posterior there and
Thompson sampling does not come back to it. Zeus's own simulator (zeus-ml 0.4.0) does the same
at the same rate: over seeds 0-299 on movielens-1m/ncf, 1.7% of ours and 2.0% of Zeus's end on
8192 on V100 (1.202x the oracle), 3.0% and 3.3% on A40 (1.125x).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from discospace.bench.common import BenchResult, Progress, ResultTable, median
from discospace.bench.zeus_sim import Simulator, simulate_operator, simulate_random
from discospace.explorer.operators.zeus.policy import (
    Attempt,
    ZeusSettings,
    read_history,
    recommendation,
)
from discospace.traces.data import TraceDataMissingError
from discospace.traces.zeus import Workload, ZeusTrace, available_gpus, zeus_folder

SEEDS = tuple(range(10))


@dataclass(frozen=True)
class RunResult:
    """One simulated job (one policy, one seed)."""

    seed: int
    batch_size: int
    power_limit: int
    final_ratio: float
    """Expected cost of the final choice / the oracle's expected cost."""
    cumulative_ratio: float
    """Cost of every attempt / (recurrences * the oracle's expected cost)."""
    energy_saving: float
    """1 - expected energy of the choice / that of the default batch size at max power."""
    attempts: int
    cumulative_cost: float
    last_ratio: float
    """Expected cost of the configuration the last recurrence ran / the oracle's."""


@dataclass(frozen=True)
class WorkloadResult:
    gpu: str
    workload: str
    default_batch_size: int
    oracle_batch_size: int
    oracle_power_limit: int
    oracle_expected_cost: float
    recurrences: int
    zeus: list[RunResult]
    random: list[RunResult]
    configurations: int
    """(batch size, power limit) combinations the power trace holds."""
    unavailable: list[list[int]]
    """[batch size, power limit] of the job's combinations without a power row."""


def _result(
    sim: Simulator, seed: int, attempts: Sequence[Attempt], choice: tuple[int, int], oracle: float
) -> RunResult:
    eta, workload = sim.settings.eta, sim.workload
    history = read_history(attempts, sim.settings, sim.job)
    expected = sim.trace.expected_cost(workload, *choice, eta)
    default = sim.job.default_batch_size
    highest = max(sim.trace.power_limits_at(workload, default))
    default_energy = sim.trace.expected_cost(workload, default, highest, 1.0)
    energy = sim.trace.expected_cost(workload, *choice, 1.0)
    total = sum(history.costs)
    last = next(a for a in reversed(attempts) if a.converged)
    last_cost = sim.trace.expected_cost(workload, last.batch_size, last.power_limit, eta)
    return RunResult(
        seed=seed,
        batch_size=choice[0],
        power_limit=choice[1],
        final_ratio=expected / oracle,
        cumulative_ratio=total / (history.recurrences * oracle),
        energy_saving=1.0 - energy / default_energy,
        attempts=len(attempts),
        cumulative_cost=total,
        last_ratio=last_cost / oracle,
    )


def bench_workload(
    trace: ZeusTrace, workload: Workload, settings: ZeusSettings, seeds: Sequence[int] = SEEDS
) -> WorkloadResult:
    """`zeus_bso` and random choice on one workload, for every seed."""
    sim = Simulator(trace, workload, settings)
    oracle = trace.oracle(workload, settings.eta)
    recurrences = sim.recurrences()
    zeus, rand = [], []
    for seed in seeds:
        attempts = simulate_operator(sim, seed, recurrences)
        pick = recommendation(settings, sim.job, read_history(attempts, settings, sim.job))
        assert pick is not None
        zeus.append(
            _result(sim, seed, attempts, (pick.batch_size, pick.power_limit), oracle.expected_cost)
        )
        randoms = simulate_random(sim, seed, recurrences)
        last = next(a for a in reversed(randoms) if a.converged)
        choice = (last.batch_size, last.power_limit)
        rand.append(_result(sim, seed, randoms, choice, oracle.expected_cost))
    return WorkloadResult(
        gpu=trace.gpu,
        workload=str(workload),
        default_batch_size=sim.job.default_batch_size,
        oracle_batch_size=oracle.batch_size,
        oracle_power_limit=oracle.power_limit,
        oracle_expected_cost=oracle.expected_cost,
        recurrences=recurrences,
        zeus=zeus,
        random=rand,
        configurations=len(sim.configurations()),
        unavailable=[[b, p] for b, p in trace.unavailable(workload)],
    )


FINAL_TARGET, WORST_TARGET, CUMULATIVE_TARGET = 1.01, 1.10, 1.10


def run(
    data_dir: Path | None = None,
    gpus: Sequence[str] = (),
    seeds: Sequence[int] = SEEDS,
    settings: ZeusSettings | None = None,
    progress: Progress | None = None,
) -> BenchResult:
    """The whole benchmark: every workload of every GPU's trace, `zeus_bso` and random choice.

    `data_dir` is the Zeus trace folder or the data folder holding it (default: the shared
    data folder); `gpus` any GPUs with a power trace there (default: every one there). Every
    trace is read before the first workload runs: `TraceDataMissingError` says which file is
    absent (and which GPUs the folder has). `progress` is told each workload's result as soon
    as it is done."""
    chosen = settings or ZeusSettings()
    traces = load_traces(data_dir, gpus)
    names = tuple(trace.gpu for trace in traces)
    todo = [(trace, workload) for trace in traces for workload in trace.workloads]
    results: list[WorkloadResult] = []
    for trace, workload in todo:
        started = time.perf_counter()
        results.append(bench_workload(trace, workload, chosen, seeds))
        if progress is not None:
            line = _progress_line(results, len(todo), time.perf_counter() - started)
            progress(_bench_result(names, seeds, chosen, results, len(todo)), line)
    return _bench_result(names, seeds, chosen, results, len(todo))


def load_traces(data_dir: Path | None = None, gpus: Sequence[str] = ()) -> list[ZeusTrace]:
    """The traces of `gpus` (default: every GPU with a power trace in the folder), each read
    and checked: `TraceDataMissingError` for an absent file or a folder without a power trace,
    `ZeusTraceError` for a file that is no trace (see `ZeusTrace.load`)."""
    names = tuple(gpus) or available_gpus(data_dir)
    if not names:
        raise TraceDataMissingError(
            f"The Zeus folder {zeus_folder(data_dir)} holds no power trace "
            "(summary_power_<gpu>.csv)."
        )
    return [ZeusTrace.load(data_dir, gpu) for gpu in names]


def _bench_result(
    gpus: Sequence[str],
    seeds: Sequence[int],
    settings: ZeusSettings,
    results: Sequence[WorkloadResult],
    total: int,
) -> BenchResult:
    return BenchResult(
        name="zeus",
        settings={"seeds": list(seeds), "gpus": list(gpus), **asdict(settings)},
        tables=[_table(results)],
        details={"workloads": [asdict(r) for r in results]},
        notes=[*_notes(results), _unavailable_note(results)],
        complete=len(results) == total,
        progress=f"{len(results)} of {total} workloads",
    )


def _progress_line(results: Sequence[WorkloadResult], total: int, seconds: float) -> str:
    r = results[-1]
    final = median(x.final_ratio for x in r.zeus)
    return (
        f"zeus {len(results)}/{total} {r.gpu} {r.workload}: final {final:.3f}, cumulative "
        f"{_median_cumulative(r):.3f} x the oracle (medians); {len(r.unavailable)} of "
        f"{r.configurations + len(r.unavailable)} combinations unavailable ({seconds:.1f} s)"
    )


SHOWN_UNAVAILABLE = 6
"""Unavailable combinations a note lists per workload (then a count of the others)."""


def _unavailable_note(results: Sequence[WorkloadResult]) -> str:
    """Which (batch size, power limit) combinations had no power row, per workload."""
    parts = []
    for r in results:
        if not r.unavailable:
            continue
        pairs = [f"{b}/{p}" for b, p in r.unavailable[:SHOWN_UNAVAILABLE]]
        more = len(r.unavailable) - len(pairs)
        listed = ", ".join(pairs) + (f" and {more} more" if more else "")
        total = r.configurations + len(r.unavailable)
        parts.append(f"{r.gpu} {r.workload} {len(r.unavailable)} of {total} ({listed})")
    return (
        "unavailable (batch size, power limit) combinations, without a power row and run by no "
        f"policy: {'; '.join(parts) if parts else 'none'}"
    )


COLUMNS = (
    "gpu",
    "workload",
    "rec.",
    "oracle b/p",
    "zeus b/p",
    "zeus final",
    "zeus worst",
    "zeus cumul.",
    "zeus worst cumul.",
    "zeus saving",
    "random final",
    "random cumul.",
    "random saving",
)


def _table(results: Sequence[WorkloadResult]) -> ResultTable:
    table = ResultTable(
        "zeus_bso vs random choice (medians over seeds; ratios to the oracle)", COLUMNS
    )
    for r in results:
        table.add(
            r.gpu,
            r.workload,
            r.recurrences,
            f"{r.oracle_batch_size}/{r.oracle_power_limit}",
            _modal_choice(r.zeus),
            _ratio(median(x.final_ratio for x in r.zeus)),
            _ratio(max(x.final_ratio for x in r.zeus)),
            _ratio(median(x.cumulative_ratio for x in r.zeus)),
            _ratio(max(x.cumulative_ratio for x in r.zeus)),
            _percent(median(x.energy_saving for x in r.zeus)),
            _ratio(median(x.final_ratio for x in r.random)),
            _ratio(median(x.cumulative_ratio for x in r.random)),
            _percent(median(x.energy_saving for x in r.random)),
        )
    return table


def _ratio(value: float) -> str:
    return f"{value:.3f}" if value < 100 else f"{value:.3g}"


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _modal_choice(runs: Sequence[RunResult]) -> str:
    picks = [f"{r.batch_size}/{r.power_limit}" for r in runs]
    top = max(sorted(set(picks)), key=picks.count)
    return f"{top} ({picks.count(top)}/{len(picks)})"


def _notes(results: Sequence[WorkloadResult]) -> list[str]:
    """One line per target: met everywhere, or where it was missed and by how much."""
    checks = (
        ("median final <=", FINAL_TARGET, lambda r: median(x.final_ratio for x in r.zeus)),
        ("worst-seed final <=", WORST_TARGET, lambda r: max(x.final_ratio for x in r.zeus)),
        ("median cumulative <=", CUMULATIVE_TARGET, _median_cumulative),
        ("worst-seed cumulative <=", CUMULATIVE_TARGET, _worst_cumulative),
    )
    lines = []
    for label, target, figure in checks:
        misses = [f"{r.gpu} {r.workload} {figure(r):.3f}" for r in results if figure(r) > target]
        verdict = "met on every workload" if not misses else "missed: " + "; ".join(misses)
        lines.append(f"{label} {target}: {verdict}")
    return lines


def _median_cumulative(result: WorkloadResult) -> float:
    return median(x.cumulative_ratio for x in result.zeus)


def _worst_cumulative(result: WorkloadResult) -> float:
    return max(x.cumulative_ratio for x in result.zeus)
