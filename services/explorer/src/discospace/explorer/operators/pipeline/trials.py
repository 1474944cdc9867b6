"""Trials: the values of each trial, chosen by Optuna (TPE, or random) as a pure function.

Trial `i` starts once every trial up to `i - window` has ended (the pipeline's `batch_size`
is the window: 1 runs them one after another), so its values are chosen from exactly those
trials' results, with a sampler seeded from the pipeline's seed and `i`: the same log gives
the same values, in any explorer, also after a restart, without recording them first.

The domains are the trials' `over` properties as a small entity space, mapped to Optuna
distributions as the Optuna operators map a space (`optuna_search/space.py`). A trial that
failed, or gave no value of the objective, is told as failed.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import optuna
from optuna.samplers import BaseSampler, RandomSampler, TPESampler
from optuna.trial import TrialState, create_trial

from discospace.core import EntitySpace
from discospace.core.pipelines import TrialsSpec
from discospace.core.spec import Scalar
from discospace.explorer.operators.optuna_search.samplers import ask_seed
from discospace.explorer.operators.optuna_search.space import SearchSpace

STARTUP_SHARE = 2
"""TPE models the results once `count // STARTUP_SHARE` trials (at least 2, at most 10) are
told; the trials before are drawn at random (Optuna's default waits for 10, more than most
pipelines run)."""


@dataclass(frozen=True)
class TrialOutcome:
    """An ended trial: its values, and its objective value (None: failed, or no value)."""

    trial: int
    values: Mapping[str, Scalar]
    objective: float | None


def first_unsettled(number: int, window: int) -> int:
    """Trials `0 .. number - window` must have ended before trial `number` starts."""
    return number - window + 1


def trial_values(
    trials: TrialsSpec, seed: int, number: int, told: Sequence[TrialOutcome]
) -> dict[str, Scalar]:
    """The values of trial `number`, given the trials it is chosen after (in trial order)."""
    space = search_space(trials)
    direction = trials.objective.direction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.create_study(direction=direction, sampler=_sampler(trials, seed, number))
        for outcome in told:
            study.add_trial(
                create_trial(
                    params=space.params(space.entity(outcome.values).as_dict()),
                    distributions=space.distributions,
                    value=outcome.objective,
                    state=TrialState.FAIL if outcome.objective is None else TrialState.COMPLETE,
                )
            )
        asked = study.ask(space.distributions)
    return space.entity(asked.params).as_dict()


def search_space(trials: TrialsSpec) -> SearchSpace:
    """The trials' `over` domains as an Optuna search space."""
    specs = [domain.property_spec(name) for name, domain in sorted(trials.over.items())]
    return SearchSpace.of(EntitySpace.from_specs(specs))


def _sampler(trials: TrialsSpec, seed: int, number: int) -> BaseSampler:
    sampler_seed = ask_seed(seed, number)
    if trials.optimizer == "random":
        return RandomSampler(seed=sampler_seed)
    startup = min(10, max(2, trials.count // STARTUP_SHARE))
    return TPESampler(seed=sampler_seed, n_startup_trials=startup, multivariate=True)


def best_trial(outcomes: Sequence[TrialOutcome], trials: TrialsSpec) -> TrialOutcome | None:
    """The trial with the best objective value (the first to reach it); None when none has one."""
    objective = trials.objective.objective()
    best: TrialOutcome | None = None
    for outcome in outcomes:
        if objective.improves(outcome.objective, best.objective if best else None):
            best = outcome
    return best
