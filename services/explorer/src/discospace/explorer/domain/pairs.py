"""One entity measured with one experiment for one operation: the facts, and what they mean.

The fold records facts only (what was requested, what came back) in any order the two topics
deliver them; what a pair's state means (in flight, to retry, done, failed for good) is worked
out when deciding, with the operation's parameters, so it never depends on arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeAlias

from discospace.core import gives_up
from discospace.events import MeasurementCompleted, MeasurementFailed, MeasurementReused
from discospace.events.common import PropertyValues

PairKey = tuple[str, str]
"""(entity id, parameterized experiment id)."""


@dataclass(frozen=True)
class PairResult:
    """A measurement result the operation received: measured, or reused from the store."""

    entity_id: str
    entity_values: PropertyValues
    experiment_id: str
    is_valid: bool
    values: PropertyValues
    invalid_reason: str | None
    reused: bool
    duration_seconds: float = 0.0
    """How long the measurement ran (0 for a reused one: it cost nothing)."""

    @classmethod
    def of(cls, event: MeasurementCompleted | MeasurementReused) -> PairResult:
        measured = event.duration_seconds if isinstance(event, MeasurementCompleted) else None
        return cls(
            entity_id=event.entity_id,
            entity_values=dict(event.entity_values),
            experiment_id=event.experiment_id,
            is_valid=event.is_valid,
            values=dict(event.values),
            invalid_reason=event.invalid_reason,
            reused=measured is None,
            duration_seconds=measured or 0.0,
        )


@dataclass
class PairFacts:
    """Everything the explorer has seen about one pair."""

    requested_attempt: int = 0
    """Highest attempt asked for with explicit points (0: only the first, through a draw)."""
    request_index: int | None = None
    """The request that asked for `requested_attempt`."""
    first_request_index: int | None = None
    """The request that first asked for the pair with explicit points (its inputs are kept)."""
    outcome: PairResult | None = None
    failures: dict[int, MeasurementFailed] = field(default_factory=dict)
    rejected: str | None = None
    """Why the sampler refused the explicit point of the latest request, if it did."""

    def latest_failure(self) -> MeasurementFailed | None:
        return self.failures[max(self.failures)] if self.failures else None


@dataclass(frozen=True)
class InFlight:
    """Requested; no answer for the latest attempt yet."""


@dataclass(frozen=True)
class RetryDue:
    """The latest attempt failed transiently: ask again with `attempt` from `at` on."""

    at: datetime
    attempt: int


@dataclass(frozen=True)
class Done:
    """Measured or reused, valid or not: never measured again by this operation."""

    outcome: PairResult


@dataclass(frozen=True)
class GaveUp:
    """Failed for good (not retryable, retries spent, or refused by the sampler)."""

    reason: str


PairStatus: TypeAlias = InFlight | RetryDue | Done | GaveUp


@dataclass(frozen=True)
class RetryPolicy:
    """How many times a transient failure is retried, and how long to wait before each retry.

    The wait doubles with each attempt, from `backoff_s` up to `max_backoff_s`.
    """

    max_retries: int
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0

    def delay(self, failed_attempt: int) -> timedelta:
        doublings = min(failed_attempt - 1, _MAX_DOUBLINGS)  # 2 ** 1024 is no float
        seconds = self.backoff_s * 2**doublings
        return timedelta(seconds=min(seconds, self.max_backoff_s))


_MAX_DOUBLINGS = 64
"""Beyond any maximum wait: 2^64 times the smallest backoff worth waiting."""


def status(facts: PairFacts, policy: RetryPolicy) -> PairStatus:
    """What the facts about a pair mean under `policy`.

    A failure is final by `discospace.core.results.gives_up`, the rule the projector's counts
    follow too.
    """
    if facts.outcome is not None:
        return Done(facts.outcome)
    if facts.rejected is not None:
        return GaveUp(f"the sampler refused it: {facts.rejected}")
    failure = facts.latest_failure()
    if failure is None or failure.attempt < facts.requested_attempt:
        return InFlight()
    if gives_up(failure.retryable, failure.attempt, policy.max_retries):
        return GaveUp(_why_given_up(failure))
    return RetryDue(failure.occurred_at + policy.delay(failure.attempt), failure.attempt + 1)


def _why_given_up(failure: MeasurementFailed) -> str:
    if not failure.retryable:
        return f"failed and cannot be retried: {failure.reason}"
    return f"failed {failure.attempt} times, last: {failure.reason}"
