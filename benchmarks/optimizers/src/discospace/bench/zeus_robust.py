"""`zeus_bso`'s robust posterior and its warm start across GPUs, beside Zeus's own simulator.

For every workload of the V100 and A40 traces and seeds 0-199 (`SEEDS`), three policies on the
same job (eta 0.5, beta 2, `2 * |B| * |P|` recurrences):

- `robust`: `zeus_bso` as the explorer runs it by default (`posterior: robust`), through the
  operator (`zeus_sim.simulate_job`);
- `zeus posterior`: `zeus_bso` with `posterior: zeus` (the policy driven directly: the same
  decisions as the operator, `tests/test_zeus_bench.py`);
- `Zeus simulator`: zeus-ml 0.4.0's own simulator, from PyPI in a throwaway environment
  (`zeus_upstream.py`), its own random streams.

Figures per policy and workload: the median of final/oracle (expected cost of the final choice
over the oracle's), the share of seeds whose final choice costs more than 1.10x the oracle, the
median and 95th percentile of cumulative/(oracle x N) (every run's cost over N recurrences at the
oracle's expected cost), and the median regret, cumulative - oracle x N, in oracle recurrences.

Cross-GPU (`warm`): for each workload and seed, a robust job on one GPU (the source, seeded
`seed + SOURCE_SEED`), then a job on the other GPU with the source's results in the store
(`OperationView.store_elsewhere`), against the cold robust job on that GPU with the same seed;
both directions. The source is another job, with training runs of its own: a training run is
drawn from (seed, attempt) and both GPUs replay one train trace, so a source of the same seed
ran, at every attempt it shared with the warm job, the very run the warm job was about to draw
(the warm figures were those of a store that knew the job's future; squad to V100 read 0.45 of
cold's regret where an independent source gives 0.53).

The constants of the robust posterior and of the warm start were chosen on seeds 1000-1099;
the seeds reported here were never used to choose them. Workloads run in two processes at most
(`WORKERS`), Zeus's simulator in a third; its results are cached (`zeus_upstream.py`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from discospace.bench.common import BenchResult, Progress, ResultTable, median
from discospace.bench.zeus_sim import Simulator, run_rng, simulate_job
from discospace.bench.zeus_upstream import ZeusEnvironment, job_spec
from discospace.explorer.operators.zeus.policy import (
    Attempt,
    HistoryFold,
    ZeusSettings,
    decision_rng,
    next_plan,
    recommendation,
)
from discospace.traces.zeus import Workload, ZeusTrace, cost

SEEDS = tuple(range(200))
SOURCE_SEED = 10**6
"""The cross-GPU source job of seed s is seeded s + SOURCE_SEED: another job, its own runs."""
GPUS = ("v100", "a40")
WORKERS = 2
WORST = 1.10
POLICIES = ("robust", "zeus posterior", "Zeus simulator")


@dataclass(frozen=True)
class Outcome:
    """One job's figures."""

    seed: int
    final_ratio: float
    cumulative_ratio: float
    regret: float
    """cumulative / oracle - N: the extra cost in oracle recurrences."""


@dataclass(frozen=True)
class Figures:
    """A policy's figures on one workload over the seeds."""

    median_final: float
    worse_than_110: float
    median_cumulative: float
    p95_cumulative: float
    median_regret: float


def figures(outcomes: Sequence[Outcome]) -> Figures:
    finals = [o.final_ratio for o in outcomes]
    cumulative = sorted(o.cumulative_ratio for o in outcomes)
    return Figures(
        median(finals),
        sum(f > WORST for f in finals) / len(finals),
        median(cumulative),
        _percentile(cumulative, 0.95),
        median(o.regret for o in outcomes),
    )


def _percentile(ordered: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of sorted values."""
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _outcome(sim: Simulator, seed: int, total: float, choice: tuple[int, int], n: int) -> Outcome:
    oracle = sim.trace.oracle(sim.workload, sim.settings.eta).expected_cost
    final = sim.trace.expected_cost(sim.workload, *choice, sim.settings.eta) / oracle
    return Outcome(seed, final, total / (n * oracle), total / oracle - n)


def _ours(
    sim: Simulator,
    seed: int,
    attempts: Sequence[Attempt],
    chosen: tuple[int, int] | None = None,
) -> Outcome:
    """A job's figures; its final choice is `chosen` (the operator's own, e.g. a warm job's)
    or the policy's recommendation for the cold job."""
    fold = HistoryFold(sim.settings, sim.job)
    for attempt in attempts:
        fold.read(attempt)
    history = fold.history()
    if chosen is None:
        pick = recommendation(sim.settings, sim.job, history)
        assert pick is not None
        chosen = (pick.batch_size, pick.power_limit)
    total = math.fsum(history.costs)
    return _outcome(sim, seed, total, chosen, sim.recurrences())


def simulate_policy(sim: Simulator, seed: int, recurrences: int) -> list[Attempt]:
    """A sequential job through the policy itself, its history folded as it goes."""
    fold, attempts = HistoryFold(sim.settings, sim.job), list[Attempt]()
    while fold.recurrences < recurrences:
        plan = next_plan(
            sim.settings, sim.job, fold.history(), (), decision_rng(seed, len(attempts))
        )
        assert plan is not None, "a sequential job never waits"
        attempts.append(sim.run(plan, run_rng(seed, len(attempts))))
        fold.read(attempts[-1])
    return attempts


def bench_workload(task: tuple[Path | None, str, str, tuple[int, ...]]) -> dict[str, Any]:
    """Robust, zeus posterior, and warm in both directions, on one workload (a worker's task)."""
    data_dir, dataset, network, seeds = task
    workload = Workload(dataset, network)
    robust, zeus = ZeusSettings(), ZeusSettings(posterior="zeus")
    sims = {gpu: Simulator(ZeusTrace.load(data_dir, gpu), workload, robust) for gpu in GPUS}
    cold: dict[str, list[Outcome]] = {gpu: [] for gpu in GPUS}
    plain: dict[str, list[Outcome]] = {gpu: [] for gpu in GPUS}
    warm: dict[str, list[Outcome]] = {gpu: [] for gpu in GPUS}
    for seed in seeds:
        sources = {
            gpu: simulate_job(sim, seed + SOURCE_SEED, sim.recurrences())
            for gpu, sim in sims.items()
        }
        for gpu, sim in sims.items():
            job = simulate_job(sim, seed, sim.recurrences())
            cold[gpu].append(_ours(sim, seed, job.attempts, job.choice))
            other = next(g for g in GPUS if g != gpu)
            warmed = simulate_job(sim, seed, sim.recurrences(), elsewhere=sources[other].results)
            warm[gpu].append(_ours(sim, seed, warmed.attempts, warmed.choice))
            zeus_sim = Simulator(sim.trace, workload, zeus)
            attempts = simulate_policy(zeus_sim, seed, sim.recurrences())
            plain[gpu].append(_ours(zeus_sim, seed, attempts))
    return {
        "workload": str(workload),
        "cold": {g: [asdict(o) for o in v] for g, v in cold.items()},
        "zeus": {g: [asdict(o) for o in v] for g, v in plain.items()},
        "warm": {g: [asdict(o) for o in v] for g, v in warm.items()},
    }


def upstream(
    data_dir: Path | None, gpu: str, workload: Workload, seeds: Sequence[int]
) -> list[Outcome]:
    """Zeus's own simulator on one workload: each seed's figures (a failed seed is left out)."""
    sim = Simulator(ZeusTrace.load(data_dir, gpu), workload, ZeusSettings(posterior="zeus"))
    n, eta = sim.recurrences(), sim.settings.eta
    spec = job_spec(sim.trace, workload, data_dir, seeds, n, eta, sim.settings.beta)
    outcomes = []
    for job in ZeusEnvironment().simulate(spec):
        if job.choice is None:
            continue
        total = math.fsum(cost(eta, e, t, sim.job.max_power) for _, _, e, _, t in job.runs)
        outcomes.append(_outcome(sim, job.seed, total, job.choice, n))
    return outcomes


def run(
    data_dir: Path | None = None,
    seeds: Sequence[int] = SEEDS,
    progress: Progress | None = None,
) -> BenchResult:
    """The whole benchmark (see the module); `progress` hears each workload as it ends."""
    started = time.perf_counter()
    workloads = list(ZeusTrace.load(data_dir, GPUS[0]).workloads)
    tasks = [(data_dir, w.dataset, w.network, tuple(seeds)) for w in workloads]
    done: list[dict[str, Any]] = []
    with ProcessPoolExecutor(WORKERS) as pool:
        pending = pool.map(bench_workload, tasks)
        zeus_own = {
            (gpu, str(w)): upstream(data_dir, gpu, w, seeds) for w in workloads for gpu in GPUS
        }
        for result in pending:
            done.append(result)
            if progress is not None:
                line = f"zeus-robust {len(done)}/{len(tasks)} {result['workload']}"
                progress(_result(done, zeus_own, seeds, len(tasks), started), line)
    return _result(done, zeus_own, seeds, len(tasks), started)


def _loaded(rows: list[dict[str, Any]]) -> list[Outcome]:
    return [Outcome(**row) for row in rows]


def _result(
    done: list[dict[str, Any]],
    zeus_own: dict[tuple[str, str], list[Outcome]],
    seeds: Sequence[int],
    total: int,
    started: float,
) -> BenchResult:
    main = ResultTable(
        "zeus_bso robust vs zeus posterior vs Zeus's own simulator (seeds "
        f"{seeds[0]}-{seeds[-1]}; ratios to the oracle; regret in oracle recurrences)",
        (
            "gpu",
            "workload",
            "policy",
            "median final",
            ">1.10x",
            "median cumul.",
            "p95 cumul.",
            "median regret",
        ),
    )
    cross = ResultTable(
        "cross-GPU warm start: median regret (oracle recurrences) and final/oracle",
        ("workload", "to", "cold regret", "warm regret", "warm/cold", "cold final", "warm final"),
    )
    checks: list[str] = []
    for result in done:
        name = result["workload"]
        for gpu in GPUS:
            rows = {
                "robust": figures(_loaded(result["cold"][gpu])),
                "zeus posterior": figures(_loaded(result["zeus"][gpu])),
                "Zeus simulator": figures(zeus_own[(gpu, name)]),
            }
            for policy, f in rows.items():
                main.add(
                    gpu,
                    name,
                    policy,
                    round(f.median_final, 4),
                    f"{100 * f.worse_than_110:.1f}%",
                    round(f.median_cumulative, 4),
                    round(f.p95_cumulative, 4),
                    round(f.median_regret, 2),
                )
            checks += _robust_checks(gpu, name, rows)
            cold, warm = (
                figures(_loaded(result["cold"][gpu])),
                figures(_loaded(result["warm"][gpu])),
            )
            ratio = warm.median_regret / cold.median_regret if cold.median_regret > 0 else math.nan
            cross.add(
                name,
                gpu,
                round(cold.median_regret, 2),
                round(warm.median_regret, 2),
                round(ratio, 2),
                round(cold.median_final, 4),
                round(warm.median_final, 4),
            )
    return BenchResult(
        name="zeus-robust",
        settings={"seeds": [seeds[0], seeds[-1]], "gpus": list(GPUS), "eta": 0.5, "beta": 2.0},
        tables=[main, cross],
        details={"workloads": done, "wall_s": round(time.perf_counter() - started, 1)},
        notes=[*checks, *_cross_checks(cross), f"wall time {time.perf_counter() - started:.0f} s"],
        complete=len(done) == total,
        progress=f"{len(done)} of {total} workloads",
    )


def _robust_checks(gpu: str, name: str, rows: dict[str, Figures]) -> list[str]:
    """The issue's three targets for the robust posterior, missed ones named."""
    robust, own = rows["robust"], rows["Zeus simulator"]
    limit = own.worse_than_110 / 2 if own.worse_than_110 > 0.01 else 0.01
    misses = []
    if robust.median_final > 1.01:
        misses.append(f"median final {robust.median_final:.4f} > 1.01")
    if robust.worse_than_110 > limit + 1e-12:
        misses.append(f"rate >1.10x {robust.worse_than_110:.3f} > {limit:.3f}")
    if robust.median_cumulative > own.median_cumulative * 1.01:
        misses.append(
            f"median cumulative {robust.median_cumulative:.4f} > Zeus's "
            f"{own.median_cumulative:.4f} x 1.01"
        )
    return [f"missed on {gpu} {name}: " + "; ".join(misses)] if misses else []


def _cross_checks(cross: ResultTable) -> list[str]:
    lines = []
    for gpu in GPUS:
        rows = [r for r in cross.rows if r[1] == gpu]
        halved = sum(1 for r in rows if isinstance(r[4], float) and r[4] <= 0.5)
        above = [str(r[0]) for r in rows if float(r[6] or 0) > float(r[5] or 0)]
        lines.append(
            f"warm start to {gpu}: regret at most half of cold on {halved} of {len(rows)} "
            f"workloads (target 4); warm median final above cold's on: "
            f"{', '.join(above) if above else 'none'}"
        )
    return lines


def markdown(result: BenchResult) -> str:
    """The tables and notes as Markdown (committed beside the JSON, which is not)."""
    parts = []
    for table in result.tables:
        parts.append(f"### {table.title}\n")
        parts.append("| " + " | ".join(table.columns) + " |")
        parts.append("|" + "---|" * len(table.columns))
        parts += ["| " + " | ".join(str(c) for c in row) + " |" for row in table.rows]
        parts.append("")
    parts += [f"- {note}" for note in result.notes]
    return "\n".join(parts) + "\n"
