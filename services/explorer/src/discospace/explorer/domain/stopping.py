"""Stopping rules: conditions that end an operation before its operator is done.

They apply to every operator, checked in this order, and the first rule met wins:

- `max_measurements`: a budget of results (measured or reused);
- `max_duration`: wall-clock time since the operation started (the explorer's timer);
- `max_measurement_time`: a budget of measurement time, the sum of the durations the actuators
  reported (`duration_seconds`); a reused measurement cost nothing and counts 0;
- `target_value`: the objective's best value reached the target;
- `no_improvement`: a plateau, the last k results of the objective's experiment did not
  improve the best.

The operator itself ends the operation when the space is exhausted. The operation then
completes at once (measurements in flight still land in the sample store, they are simply not
waited for), and `OperationCompleted.stop_reason` names the rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from discospace.core import Time, TimeUnit
from discospace.events import StoppingRules
from discospace.events.operations import StopReason
from discospace.explorer.domain.objective import ObjectiveTracker
from discospace.explorer.domain.pairs import PairResult


@dataclass(frozen=True)
class Stop:
    """Why the operation stops, as `OperationCompleted` says it."""

    reason: StopReason
    detail: str


def check_rules(rules: StoppingRules) -> str | None:
    """Why the rules cannot be applied, in one sentence, or None when they can."""
    duration = rules.max_duration
    if duration is not None and duration.unit is not TimeUnit.SECOND:
        return (
            f"max_duration must be a wall-clock time such as 2h or 90sec, not {duration}: "
            "the explorer measures it with a clock"
        )
    spent = rules.max_measurement_time
    if spent is not None and (spent.unit is not TimeUnit.SECOND or spent.value <= 0):
        return (
            f"max_measurement_time must be a positive time in seconds such as 2h or 90sec, not "
            f"{spent}: it is compared with the durations the actuators report"
        )
    return None


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


def rule_met(
    rules: StoppingRules,
    outcomes: Sequence[PairResult],
    tracker: ObjectiveTracker | None,
    started_at: datetime,
    now: datetime,
) -> Stop | None:
    """The first rule met by an operation with these results, at `now`; None if none."""
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
    if stop is None and tracker is not None:
        stop = _objective_rule_met(rules, tracker)
    return stop


def _measurement_time_spent(rules: StoppingRules, outcomes: Sequence[PairResult]) -> Stop | None:
    budget = rules.max_measurement_time
    if budget is None:
        return None
    spent = measurement_seconds(outcomes)
    if spent < budget.value:
        return None
    return Stop(
        "max_measurement_time",
        f"measurements took {spent:g} s in total, reaching the budget of {budget.value} s",
    )


def _objective_rule_met(rules: StoppingRules, tracker: ObjectiveTracker) -> Stop | None:
    name = tracker.objective.property
    target = rules.target_value
    if target is not None and tracker.best is not None and tracker.reached(target):
        return Stop("target_reached", f"{name} reached {tracker.best.value}, target {target}")
    patience = rules.no_improvement
    if patience is not None and tracker.without_improvement >= patience:
        return Stop(
            "no_improvement",
            f"{tracker.without_improvement} measurements in a row did not improve {name}",
        )
    return None
