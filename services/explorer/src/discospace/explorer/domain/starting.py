"""Starting an operation: check the request, fill in the seed, accept or refuse it.

A request names a registered space and an operator; the parameters must fit both. The space
may not have been read yet (nothing orders the spaces topic against the operations topic), so
the explorer waits for it until a deadline (a while after it noticed the request) before
refusing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

from discospace.core.operation_rules import unmeasured_objective
from discospace.events import (
    OperationCancelRequested,
    OperationCompleted,
    OperationCounts,
    OperationFailed,
    OperationParameters,
    OperationRequested,
)
from discospace.events import OperationStarted as Started
from discospace.events.envelope import MAX_OPERATION_REASON_CHARS, content_id, shortened
from discospace.explorer.domain.conducting import Conductor
from discospace.explorer.domain.operator import Operator, OperatorRegistry
from discospace.explorer.domain.spaces import KnownSpace, SpaceEntry
from discospace.explorer.domain.stopping import check_rules
from discospace.explorer.domain.training import check_budget

SEED_RANGE = 2**31
"""Seeds the explorer picks lie in [0, SEED_RANGE)."""


@dataclass(frozen=True)
class WaitForSpace:
    """The space is not known yet: decide again at `until`, then refuse if still unknown."""

    until: datetime


StartDecision: TypeAlias = Started | OperationFailed | WaitForSpace


def start(
    request: OperationRequested,
    spaces: dict[str, SpaceEntry],
    operators: OperatorRegistry,
    space_deadline: datetime,
    now: datetime,
) -> StartDecision:
    """Accept the request (`OperationStarted`), refuse it (`OperationFailed`) or wait."""
    operator = operators.get(request.operator)
    if operator is None:
        known = ", ".join(operators.names)
        return refuse(request, f"operator '{request.operator}' is not known: use {known}", now)
    entry = spaces.get(request.space_id)
    if entry is None:
        return _wait_or_refuse(request, space_deadline, now)
    if isinstance(entry, str):
        return refuse(request, entry, now)
    parameters = with_seed(request)
    problem = check(parameters, entry, operator)
    if problem is not None:
        return refuse(request, problem, now)
    return Started.caused_by(
        request,
        now,
        operation_id=request.operation_id,
        space_id=request.space_id,
        operator=request.operator,
        parameters=parameters,
    )


def refuse(request: OperationRequested, reason: str, now: datetime) -> OperationFailed:
    """The request refused, with `reason` (cut short: it may quote what the request held)."""
    reason = shortened(reason, MAX_OPERATION_REASON_CHARS)
    return OperationFailed.caused_by(request, now, operation_id=request.operation_id, reason=reason)


def cancelled_before_start(
    request: OperationRequested, cancel: OperationCancelRequested, now: datetime
) -> OperationCompleted:
    """Cancelled before it started (e.g. while waiting for its space): nothing was measured."""
    detail = f"cancelled by {cancel.requested_by} before it started"
    detail += f": {cancel.reason}" if cancel.reason else ""
    return OperationCompleted.caused_by(
        request,
        now,
        operation_id=request.operation_id,
        space_id=request.space_id,
        stop_reason="cancelled",
        stop_detail=shortened(detail, MAX_OPERATION_REASON_CHARS),
        counts=OperationCounts(requested=0, measured=0, reused=0, failed=0, invalid=0),
    )


def _wait_or_refuse(
    request: OperationRequested, deadline: datetime, now: datetime
) -> WaitForSpace | OperationFailed:
    if now < deadline:
        return WaitForSpace(deadline)
    return refuse(request, f"space '{request.space_id}' is not registered", now)


def with_seed(request: OperationRequested) -> OperationParameters:
    """The parameters, with a seed derived from the request when it gave none.

    Derived rather than drawn, so a restarted explorer picks the same seed.
    """
    parameters = request.parameters
    if parameters.seed is not None:
        return parameters
    seed = int(content_id("seed", request.event_id), 16) % SEED_RANGE
    return parameters.model_copy(update={"seed": seed})


def check(
    parameters: OperationParameters, space: KnownSpace, operator: Operator | Conductor
) -> str | None:
    """Why the operation cannot run as asked, in one sentence, or None when it can."""
    rules = parameters.stopping
    problem = check_rules(rules) or check_budget(rules, space)
    problem = problem or _unmeasured_objective(parameters, space)
    return problem or operator.check(parameters, space)


def _unmeasured_objective(parameters: OperationParameters, space: KnownSpace) -> str | None:
    """The first objective no experiment of the space measures, in one sentence; None when every
    one is measured. Every objective counts: `objective` (its best entity and stopping rules)
    and each of `objectives` (what an optimizer optimises). The rule is core's, which the CLI
    applies too before it publishes a request."""
    objectives = (parameters.objective, *parameters.objectives_to_optimise())
    names = (objective.property if objective is not None else None for objective in objectives)
    return unmeasured_objective(names, space.observed_ids, space.space_id)
