"""The Optuna samplers an operator can run, each seeded for one ask.

A sampler is built afresh for every ask with a seed derived from the operation's seed and the
number of the ask, so the same history and seed give the same suggestion, in any process.

- `tpe`: `TPESampler` (multivariate by default, constant liar for points in flight);
- `gp`: `GPSampler` (needs `torch` and `scipy`, installed with the explorer's `gp` extra);
- `cmaes`: `CmaEsSampler` (numbers only, one objective; needs `cmaes`);
- `nsga2`: `NSGAIISampler` (a genetic algorithm for one or more objectives).

Every sampler reads `is_valid = 0` as a violated constraint from the trial's constraint
attribute (Optuna's `Trial.set_constraint` storage), not as an objective value.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Literal

import optuna
from optuna.samplers import (
    BaseSampler,
    CmaEsSampler,
    GPSampler,
    NSGAIISampler,
    TPESampler,
)

from discospace.events.envelope import content_id
from discospace.explorer.operators.optuna_search.options import SearchOptions

SamplerKind = Literal["tpe", "gp", "cmaes", "nsga2"]
NEEDS: dict[SamplerKind, tuple[str, ...]] = {
    "tpe": (),
    "gp": ("torch", "scipy"),
    "cmaes": ("cmaes",),
    "nsga2": (),
}
MULTI_OBJECTIVE: dict[SamplerKind, bool] = {"tpe": True, "gp": True, "cmaes": False, "nsga2": True}
STATEFUL: dict[SamplerKind, bool] = {"tpe": False, "gp": False, "cmaes": True, "nsga2": False}
"""CMA-ES keeps its search distribution in trial attributes: its study is rebuilt by asking
again, in order, every point it proposed (see `study.py`)."""

optuna.logging.set_verbosity(optuna.logging.WARNING)


def missing_packages(kind: SamplerKind) -> list[str]:
    """The packages a sampler needs that are not installed."""
    return [name for name in NEEDS[kind] if importlib.util.find_spec(name) is None]


def ask_seed(seed: int, ask: int, attempt: int = 0) -> int:
    """The sampler seed of the `ask`-th ask (0-based) of an operation seeded `seed`; a
    suggestion asked again (it was taken) uses the next `attempt`."""
    return int(content_id("optuna-ask", str(seed), str(ask), str(attempt)), 16) % 2**32


def make_sampler(
    kind: SamplerKind, seed: int, options: SearchOptions, startup: int = 10
) -> BaseSampler:
    """A sampler of `kind` seeded with `seed`, sampling at random for `startup` results."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "tpe":
            return TPESampler(
                seed=seed,
                n_startup_trials=startup,
                multivariate=options.multivariate,
                constant_liar=True,
            )
        if kind == "gp":
            return GPSampler(seed=seed, n_startup_trials=startup)
        if kind == "cmaes":
            return CmaEsSampler(
                seed=seed,
                n_startup_trials=startup,
                warn_independent_sampling=False,
            )
        return NSGAIISampler(seed=seed, population_size=options.population_size)
