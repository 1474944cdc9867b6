"""Zeus's own trace-driven simulator (zeus-ml from PyPI), run beside `zeus_bso` on the same jobs.

Zeus is never vendored and never imported into this environment: `ZeusEnvironment` creates a
throwaway virtual environment in a cache folder (`$DISCOSPACE_ZEUS_VENV`, default
`~/.cache/discospace/zeus-ml-0.4.0`), installs `zeus-ml==0.4.0` there with pip (PyPI must be
reachable the first time), and runs `RUNNER`, a short script, as a subprocess that prints JSON.
zeus-ml 0.4.0 pins pandas 1.4.2, which has no wheel for Python 3.11 and later; it is installed
without its dependencies, then with pandas 1.5.3 (the last 1.x, whose `groupby().mean()` still
skips text columns as the simulator expects) and numpy < 2; `zeus.analyze` imports scikit-learn
for log analysis the simulator never calls, so the runner stubs that import.

Speed: the plain simulator filters a DataFrame several times per run (about 50 ms a run here,
hours for 200 seeds of 12 workloads). The runner subclasses it (`Fast`) to memoise those lookups
and replay the draw as pandas makes it; the optimizers, the job loop, early stopping and the
costs stay Zeus's. `tests/test_zeus_upstream.py` checks the memoised runner run for run against
the plain one (`fast: false` in the spec).

One job per seed, as the Zeus artifact runs it: `Simulator(train, power,
PruningGTSBatchSizeOptimizer(seed=seed), JITPowerLimitOptimizer(), seed=seed)
.simulate_one_job(job, recurrences, beta, eta)` on the workload's rows of the traces. The
runner reads the optimizers' state after the job (the
simulator's deep copies are switched off for that): the final choice is the arm of best posterior
mean and the power limit its profiling chose, as `zeus_bso`'s recommendation. Every run is
reported (batch size, power limit, energy, converged, time); runs that never started are not in
Zeus's history and cost nothing.

Results are cached beside the environment, keyed by a hash of the traces' rows, the job and the
seeds, so a rerun of the benchmark does not simulate again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from discospace.traces.zeus import TRAIN_FILE, Workload, ZeusTrace, power_file, zeus_folder

ZEUS_ML = "zeus-ml==0.4.0"
RUNTIME = ("pandas==1.5.3", "numpy<2")
RUNNER_VERSION = "1"

RUNNER = r'''
import contextlib, io, json, sys, types
import numpy as np

# zeus.analyze imports scikit-learn for log analysis the simulator never calls.
sys.modules.setdefault("sklearn", types.ModuleType("sklearn"))
sys.modules.setdefault("sklearn.metrics", types.SimpleNamespace(auc=None))
import pandas as pd
import zeus.simulate as simulate
from zeus.job import Job
from zeus.policy import JITPowerLimitOptimizer, PruningGTSBatchSizeOptimizer

simulate.deepcopy = lambda value: value  # read the optimizers' state after the job
spec = json.load(sys.stdin)


class Fast(simulate.Simulator):
    """Zeus's trace lookups, memoised: the same rows in the same order, the same draw
    (`DataFrame.sample(n=1, random_state=rng)` is `rng.choice(len, size=1, replace=False)`), the
    same arithmetic; checked run for run against the plain simulator."""

    rows, profiles = {}, {}

    def _run_job(self, job, batch_size, power_limit, rng, cost_ub, eta_knob, profile_power):
        key = (batch_size, power_limit)
        if key not in self.rows:
            df = job.filter_df(self.df)
            power_df = df.loc[df.batch_size == batch_size]
            path = power_df.loc[df.power_limit == power_limit]
            self.rows[key] = (
                path.target_epoch.to_numpy(), path.time_per_epoch.to_numpy(),
                path.energy_per_epoch.to_numpy(), power_df.power_limit.max().item(),
                power_df.energy_per_epoch.mean().item(), power_df.time_per_epoch.mean().item())
        epochs, tpe, epe, top, first_e, first_t = self.rows[key]
        at = int(rng.choice(len(epochs), size=1, replace=False)[0])
        if cost_ub == np.inf:
            max_epochs = job.max_epochs
        else:
            per_epoch = eta_knob * epe[at].item() + (1 - eta_knob) * top * tpe[at].item()
            max_epochs = min(cost_ub // per_epoch, job.max_epochs)
        if max_epochs == 0:
            return 0.0, 0.0, False
        def spent(n):
            if profile_power:
                return first_e + epe[at].item() * (n - 1), first_t + tpe[at].item() * (n - 1)
            return epe[at].item() * n, tpe[at].item() * n
        target = epochs[at].item()
        if not np.isnan(target) and target <= max_epochs:
            energy, time = spent(target)
            return energy, time, True
        energy, time = spent(max_epochs)
        return energy, time, False

    def _profile_power_limit(self, job, batch_size, eta_knob):
        key = (batch_size, eta_knob)
        if key not in self.profiles:
            self.profiles[key] = simulate.Simulator._profile_power_limit(
                self, job, batch_size, eta_knob)
        return self.profiles[key]


train = pd.read_csv(spec["train"])
power = pd.read_csv(spec["power"])
mine = lambda df: df[(df.dataset == spec["dataset"]) & (df.network == spec["network"])]
train, power = mine(train), mine(power)
job = Job(spec["dataset"], spec["network"], spec["optimizer"], spec["target_metric"],
          spec["max_epochs"], spec["default_batch_size"])
kind = Fast if spec.get("fast", True) else simulate.Simulator
for seed in spec["seeds"]:
    bso = PruningGTSBatchSizeOptimizer(seed=seed, verbose=False)
    plo = JITPowerLimitOptimizer(verbose=False)
    sim = kind(train, power, bso, plo, seed=seed, verbose=False)
    row = {"seed": seed}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            history = sim.simulate_one_job(job, spec["recurrences"], spec["beta"], spec["eta"])
        mab = bso.mabs[job]
        best = max(mab.arms, key=lambda arm: mab.arm_param_mean[arm])
        row["runs"] = [[int(h.bs), int(h.pl), float(h.energy), bool(h.reached), float(h.time)]
                       for h in history]
        row["choice"] = [int(best), int(plo.predict(job, best))]
    except Exception as error:
        row["error"] = f"{type(error).__name__}: {error}"
    print(json.dumps(row), flush=True)
'''


class ZeusUnavailableError(RuntimeError):
    """Zeus's simulator could not be installed or run; the message is one sentence."""


@dataclass(frozen=True)
class UpstreamJob:
    """One seed of Zeus's own simulator: its runs and its final choice (None: it failed)."""

    seed: int
    runs: tuple[tuple[int, int, float, bool, float], ...]
    """(batch size, power limit, energy J, converged, time s) of every run that started."""
    choice: tuple[int, int] | None
    error: str | None = None


def cache_root() -> Path:
    """Where the environment and the cached results live."""
    given = os.environ.get("DISCOSPACE_ZEUS_VENV")
    if given:
        return Path(given)
    return Path.home() / ".cache" / "discospace" / ZEUS_ML.replace("==", "-")


class ZeusEnvironment:
    """The throwaway environment holding zeus-ml, created on first use."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root()
        self.python = self.root / "venv" / "bin" / "python"

    def ensure(self) -> Path:
        """The environment's Python, installing zeus-ml first when it is not there yet."""
        if not self._ready():
            self._install()
        return self.python

    def _ready(self) -> bool:
        if not self.python.exists():
            return False
        probe = [str(self.python), "-c", "import zeus.simulate"]
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0

    def _install(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        pip = [str(self.python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        steps = (
            [sys.executable, "-m", "venv", "--clear", str(self.root / "venv")],
            [*pip, "--no-deps", ZEUS_ML],
            [*pip, *RUNTIME],
        )
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise ZeusUnavailableError(
                    f"could not install Zeus's simulator ({ZEUS_ML}) in {self.root}: {last}"
                )

    def simulate(self, spec: dict[str, Any]) -> list[UpstreamJob]:
        """Every seed of `spec` through Zeus's simulator (cached by the spec's content)."""
        cached = self.root / "results" / f"{_key(spec)}.json"
        if cached.is_file():
            return [_job(row) for row in json.loads(cached.read_text())]
        done = subprocess.run(
            [str(self.ensure()), "-c", RUNNER],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise ZeusUnavailableError(f"Zeus's simulator failed: {last}")
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(rows))
        return [_job(row) for row in rows]


def job_spec(
    trace: ZeusTrace,
    workload: Workload,
    data_dir: Path | None,
    seeds: Sequence[int],
    recurrences: int,
    eta: float,
    beta: float,
) -> dict[str, Any]:
    """What the runner needs for one workload on one GPU: the paper's job as our trace reads it."""
    job = trace.job(workload)
    folder = zeus_folder(data_dir)
    return {
        "train": str(folder / TRAIN_FILE),
        "power": str(folder / power_file(trace.gpu)),
        "dataset": workload.dataset,
        "network": workload.network,
        "optimizer": job.optimizer,
        "target_metric": job.target_metric,
        "max_epochs": job.max_epochs,
        "default_batch_size": job.default_batch_size,
        "recurrences": recurrences,
        "eta": eta,
        "beta": beta,
        "seeds": list(seeds),
    }


def _key(spec: dict[str, Any]) -> str:
    """A hash of the job, the seeds and the workload's rows of both traces."""
    digest = hashlib.sha256(json.dumps({**spec, "runner": RUNNER_VERSION}).encode())
    for name in ("train", "power"):
        table = pd.read_csv(spec[name])
        rows = table[(table.dataset == spec["dataset"]) & (table.network == spec["network"])]
        digest.update(rows.to_csv(index=False).encode())
    return digest.hexdigest()[:24]


def _job(row: dict[str, Any]) -> UpstreamJob:
    runs = tuple(
        (int(b), int(p), float(e), bool(c), float(t)) for b, p, e, c, t in row.get("runs", ())
    )
    choice = row.get("choice")
    return UpstreamJob(
        int(row["seed"]),
        runs,
        (int(choice[0]), int(choice[1])) if choice else None,
        row.get("error"),
    )
