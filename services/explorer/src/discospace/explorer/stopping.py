"""Stopping rules: conditions that end an operation before its operator is done.

They apply to every operator. The first rule met wins; the operation then completes at once
(measurements in flight still land in the sample store, they are simply not waited for).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from discospace.core import Time, TimeUnit
from discospace.events import StoppingRules
from discospace.events.operations import StopReason
from discospace.explorer.objective import ObjectiveTracker


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
    return None


def duration(rules: StoppingRules) -> timedelta | None:
    """`max_duration` as a timedelta (checked by `check_rules` beforehand)."""
    limit: Time | None = rules.max_duration
    return None if limit is None else timedelta(seconds=limit.value)


def deadline(rules: StoppingRules, started_at: datetime) -> datetime | None:
    """When `max_duration` ends the operation, if it is set."""
    limit = duration(rules)
    return None if limit is None else started_at + limit


def rule_met(
    rules: StoppingRules,
    results: int,
    tracker: ObjectiveTracker | None,
    started_at: datetime,
    now: datetime,
) -> Stop | None:
    """The first rule met by an operation with `results` results, at `now`; None if none."""
    if rules.max_measurements is not None and results >= rules.max_measurements:
        return Stop(
            "max_measurements",
            f"{results} measurements reached the budget of {rules.max_measurements}",
        )
    end = deadline(rules, started_at)
    if end is not None and now >= end:
        return Stop("max_duration", f"ran for {rules.max_duration}, its maximum duration")
    if tracker is not None:
        return _objective_rule_met(rules, tracker)
    return None


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
