"""Stopping rules: conditions that end an operation before its operator is done.

They apply to every operator, checked in this order, and the first rule met wins:

- `max_measurements`: a budget of results (measured or reused);
- `max_duration`: wall-clock time since the operation started (the explorer's timer);
- `max_measurement_time`: a budget of measurement time, the sum of the durations the actuators
  reported (`duration_seconds`); a reused measurement cost nothing and counts 0. In seconds, or
  in `dur` as a fraction of `max_duration` (`0.5dur` of `2h` is 1 h);
- `max_training`: a budget of training (`50ep`, `2e6tok`, `3dur`), the sum of what each measured
  result trained, converted with its own facts (`training.py`); a reused result counts 0;
- `target_value`: the objective's best value reached the target;
- `no_improvement`: a plateau, the last k results of the objective's experiment did not
  improve the best.

The operator itself ends the operation when the space is exhausted. The operation then
completes at once (measurements in flight still land in the sample store, they are simply not
waited for), and `OperationCompleted.stop_reason` names the rule.

A `dur` is a fraction of a maximum, and is refused where there is none: `max_duration` is the
maximum itself, and `max_measurement_time` in `dur` needs `max_duration`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from discospace.core import Time, TimeUnit
from discospace.core.operation_rules import stopping_problem
from discospace.core.time_conversion import share_of
from discospace.events import StoppingRules
from discospace.events.operations import StopReason
from discospace.explorer.domain.objective import ObjectiveTracker
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.training import TrainingTally


@dataclass(frozen=True)
class Stop:
    """Why the operation stops, as `OperationCompleted` says it."""

    reason: StopReason
    detail: str


def check_rules(rules: StoppingRules) -> str | None:
    """Why the rules cannot be applied, in one sentence, or None when they can (the rule is
    core's `stopping_problem`, which the CLI applies too before it publishes a request)."""
    return stopping_problem(rules)


def duration(rules: StoppingRules) -> timedelta | None:
    """`max_duration` as a timedelta (checked by `check_rules` beforehand)."""
    limit: Time | None = rules.max_duration
    return None if limit is None else timedelta(seconds=limit.value)


def deadline(rules: StoppingRules, started_at: datetime) -> datetime | None:
    """When `max_duration` ends the operation, if it is set."""
    limit = duration(rules)
    return None if limit is None else started_at + limit


def measurement_seconds(outcomes: Sequence[PairResult]) -> float:
    """Measurement time the results cost: the sum of their durations (reused ones are free)."""
    return math.fsum(outcome.duration_seconds for outcome in outcomes)


def measurement_time_budget(rules: StoppingRules) -> float | None:
    """`max_measurement_time` in seconds (a dur of `max_duration`), checked beforehand."""
    budget = rules.max_measurement_time
    if budget is None or budget.unit is not TimeUnit.DURATION:
        return None if budget is None else float(budget.value)
    maximum = rules.max_duration
    assert maximum is not None, "check_rules refuses a dur without max_duration"
    # exact: 0.07dur of 100sec is 7 s, not 7.000000000000001 (a float product, which let a
    # seventh second-long measurement pass the budget); and not rounded down to whole seconds
    # as a conversion to `sec` is (0.05dur of 10sec was 0 s: the operation ended at once)
    return share_of(float(budget.value), float(maximum.value))


def rule_met(
    rules: StoppingRules,
    outcomes: Sequence[PairResult],
    tracker: ObjectiveTracker | None,
    started_at: datetime,
    now: datetime,
    training: TrainingTally | None = None,
) -> Stop | None:
    """The first rule met by an operation with these results, at `now`; None if none.

    `training` is what the results trained, already read (`TrainingTally.update`)."""
    results = len(outcomes)
    if rules.max_measurements is not None and results >= rules.max_measurements:
        return Stop(
            "max_measurements",
            f"{results} measurements reached the budget of {rules.max_measurements}",
        )
    end = deadline(rules, started_at)
    if end is not None and now >= end:
        return Stop("max_duration", f"ran for {rules.max_duration}, its maximum duration")
    stop = _measurement_time_spent(rules, outcomes)
    if stop is None and training is not None and training.reached:
        stop = Stop("max_training", training.summary())
    if stop is None and tracker is not None:
        stop = _objective_rule_met(rules, tracker)
    return stop


def _measurement_time_spent(rules: StoppingRules, outcomes: Sequence[PairResult]) -> Stop | None:
    budget = measurement_time_budget(rules)
    if budget is None:
        return None
    spent = measurement_seconds(outcomes)
    if spent < budget:
        return None
    return Stop(
        "max_measurement_time",
        f"measurements took {seconds_text(spent)} s in total, reaching the budget of "
        f"{seconds_text(budget)} s",
    )


def seconds_text(value: float) -> str:
    """Seconds as written in full, to the millisecond (`:g` kept six digits: 1234571.5 s
    spent and a budget of 1234567 s both read 1.23457e+06)."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _objective_rule_met(rules: StoppingRules, tracker: ObjectiveTracker) -> Stop | None:
    name = tracker.objective.property
    target = rules.target_value
    if target is not None and tracker.best is not None and tracker.reached(target):
        return Stop("target_reached", f"{name} reached {tracker.best.value}, target {target}")
    patience = rules.no_improvement
    if patience is not None and tracker.plateaued:
        return Stop("no_improvement", f"{patience} measurements in a row did not improve {name}")
    return None
