"""Why a handler failed, and what becomes of its message: tried again, or set aside.

A handler that raises is in one of two cases, told apart by `is_transient`:

- **transient**: a dependency failed for now (the store or the broker unreachable, a timeout,
  or a `TransientError` a service raises). The message is not at fault: it is tried again
  without bound, never dead-lettered and never committed past, so nothing is lost; a consumer
  that keeps retrying shows in /health as stalled (`stalls.py`).
- **poison**: any other exception. The message is at fault for this handler: it is tried
  `max_attempts` times in all, then set aside (dead-lettered with the reason) so the partition
  moves on.

Either way the pause before the next try doubles from `backoff_s` up to `backoff_max_s`
(`RetryPolicy`). `Attempts` counts the failures of the message at the head of each partition
(transient ones for the pause only), and says when to give up.

An error counts as transient when it, or an error it was raised from or while handling
(`__cause__`, `__context__`), is one of:

- `TransientError`, `ConnectionError`, `TimeoutError` (`asyncio.TimeoutError` included);
- an `OSError` other than one about a path or a file's content (`FileNotFoundError`,
  `FileExistsError`, `IsADirectoryError`, `NotADirectoryError`, a name too long, a loop of
  links, an invalid argument: a path a message named; `gzip.BadGzipFile`: a file it named is
  corrupt). A `PermissionError` stays transient: it is as often a volume mounted with the wrong
  owner, which an operator fixes, and every message would be dead-lettered meanwhile;
- a Kafka error (aiokafka's `KafkaError`) other than one about the record sent (too large,
  invalid, bad topic name, bad argument): the broker is a dependency;
- a database `OperationalError` (the DB-API name: clickhouse-connect's and chDB's "the server
  went away" errors).
"""

from __future__ import annotations

import asyncio
import errno
import gzip
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from aiokafka import errors as kafka_errors

from discospace.runtime.stalls import describe

T = TypeVar("T")

_PATH_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    gzip.BadGzipFile,
)
"""OSErrors about a path or a file: one the message named, not a dependency that is down."""
_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ELOOP, errno.EINVAL})
"""Error numbers of OSErrors about a path the message named (the same path fails again)."""

_RECORD_ERRORS = (
    kafka_errors.MessageSizeTooLargeError,
    kafka_errors.RecordTooLargeError,
    kafka_errors.RecordListTooLargeError,
    kafka_errors.InvalidMessageError,
    kafka_errors.CorruptRecordException,
    kafka_errors.InvalidTimestampError,
    kafka_errors.UnsupportedForMessageFormatError,
    kafka_errors.InvalidTopicError,
    kafka_errors.IllegalArgumentError,
)
"""Kafka errors about what was sent: the same message would fail the same way again."""

MAX_CAUSES = 16
"""How far down a chain of causes `is_transient` looks."""


class TransientError(Exception):
    """A dependency of a handler failed for now (the store, the broker, another service).

    Raise it, or `raise TransientError("...") from error`, to have the message tried again
    without bound instead of dead-lettered after `handler_max_attempts`."""


def causes(error: BaseException) -> list[BaseException]:
    """`error`, then what it was raised from or while handling, as a traceback shows them."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < MAX_CAUSES and current not in chain:
        chain.append(current)
        suppressed = current.__suppress_context__
        current = current.__cause__ or (None if suppressed else current.__context__)
    return chain


def is_transient(error: BaseException) -> bool:
    """Whether `error` says that a dependency failed for now (see the module docstring)."""
    return any(_transient_itself(each) for each in causes(error))


def _transient_itself(error: BaseException) -> bool:
    if isinstance(error, TransientError | ConnectionError | TimeoutError):
        return True
    if isinstance(error, kafka_errors.KafkaError):
        return not isinstance(error, _RECORD_ERRORS)
    if isinstance(error, OSError):
        return not isinstance(error, _PATH_ERRORS) and error.errno not in _PATH_ERRNOS
    return any(cls.__name__ == "OperationalError" for cls in type(error).__mro__)


@dataclass(frozen=True)
class RetryPolicy:
    """How often a failing message is tried, and how long to pause between tries."""

    max_attempts: int = 5
    """Tries in all of a message whose handler fails with a poison error."""
    backoff_s: float = 0.5
    """Pause after the first failure; it doubles with each failure in a row."""
    backoff_max_s: float = 30.0
    """The longest pause."""

    def pause_s(self, failures: int) -> float:
        """The pause after the `failures`-th failure in a row of one message."""
        doublings = min(max(failures - 1, 0), 32)
        return min(self.backoff_s * 2**doublings, self.backoff_max_s)


@dataclass(frozen=True)
class Verdict:
    """What becomes of a message whose handler just failed."""

    transient: bool
    failures: int
    """Failures in a row of this message, transient ones included."""
    attempts: int
    """Failures that count against `max_attempts` (the poison ones)."""
    give_up: bool
    """Set it aside now (dead-letter it); else try again after `pause_s`."""
    pause_s: float
    error: str
    """`Type: message` of the last error, cut short."""

    @property
    def reason(self) -> str:
        """The dead letter's reason: what failed, and how often."""
        return f"the handler failed {self.attempts} times, last with {self.error}"


@dataclass
class _Failing:
    offset: int
    failures: int = 0
    attempts: int = 0


@dataclass
class Attempts:
    """The failures in a row of the message at the head of each partition of a consumer."""

    policy: RetryPolicy = field(default_factory=RetryPolicy)
    _failing: dict[Hashable, _Failing] = field(default_factory=dict)

    def failed(self, key: Hashable, offset: int, error: BaseException) -> Verdict:
        """Count a failure of the message of `key` at `offset`, and say what to do with it."""
        failing = self._failing.get(key)
        if failing is None or failing.offset != offset:
            failing = self._failing[key] = _Failing(offset)
        transient = is_transient(error)
        failing.failures += 1
        failing.attempts += 0 if transient else 1
        give_up = not transient and failing.attempts >= self.policy.max_attempts
        pause_s = 0.0 if give_up else self.policy.pause_s(failing.failures)
        return Verdict(
            transient, failing.failures, failing.attempts, give_up, pause_s, describe(error)
        )

    def done(self, key: Hashable) -> None:
        """The message of `key` went through, or was set aside: the next one starts afresh."""
        self._failing.pop(key, None)


async def settle(
    work: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    logger: logging.Logger,
    what: str | Callable[[], str],
    failed: Exception | None = None,
) -> T | Verdict:
    """`work()`'s result, tried again by `policy` (transient failures without bound), or the
    verdict that gave up on it: how a start-up fold treats one event (`folding.py`).

    `what` names the work in log lines; a callable is called only if the work fails (a fold
    settles every event, and nearly all go through at once). `failed`: the error of a first
    try the caller made itself (counted as this call's first)."""
    if failed is None:
        try:
            return await work()
        except Exception as error:  # classified, then tried again or given up on
            failed = error
    first = failed
    name = what() if callable(what) else what
    attempts = Attempts(policy)
    while True:
        verdict = attempts.failed(name, 0, first)
        if verdict.give_up:
            return verdict
        logger.warning(
            "%s failed (%s); trying again in %.1f s",
            name,
            verdict.error,
            verdict.pause_s,
            extra={"transient": verdict.transient, "failures": verdict.failures},
        )
        await asyncio.sleep(verdict.pause_s)
        try:
            return await work()
        except Exception as error:  # classified at the top of the loop
            first = error
