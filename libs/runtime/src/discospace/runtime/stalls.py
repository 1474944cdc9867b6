"""Stalled consumers: which partition of which consumer no longer moves on, and why.

A consumer (a consumer group, or a service's consumer without one, on a topic) is stalled on a
partition when, by the rules of `StallRules`:

- **retrying**: the message at one offset failed in its handler more than `failures` times in a
  row, or has kept failing for `after_s` (a transient failure retries without end; a poison
  message before it is dead-lettered);
- **holding**: one delivery of a message has been in its handler for longer than `after_s` and
  than the consumer's own max poll interval (the time Kafka lets a handler take: an actuator's
  is longer than its measurements);
- **not moving**: messages wait (lag above 0) and the consumer's position, seen by the lag
  passes, has not moved for `after_s` while no message of that partition was in a handler.

A consumer that is idle (lag 0) is never stalled, nor one working through a backlog (its
position moves), nor one folding its topics at start (the fold runs before the broker consumes
and before the lag passes begin). Only what was seen counts: a partition not assigned any more
is forgotten, and when the lag cannot be measured (the broker is away) the last verdict stands.

`StallWatch` keeps what the dead-letter middleware (deliveries, failures, messages that went
through) and the lag passes (positions, ends, assignments) tell it; `stalls()` applies the
rules. The rules themselves are pure functions of that state and the time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

PartitionKey = tuple[str, str, int]
"""(group, topic, partition)"""

logger = logging.getLogger("discospace.runtime.stalls")


@dataclass(frozen=True)
class StallRules:
    """When a consumer counts as stalled (see the module docstring)."""

    after_s: float = 60.0
    failures: int = 10


@dataclass
class Failing:
    """The message of a partition whose handler failed, and has not gone through since."""

    offset: int
    first_s: float
    count: int
    error: str


@dataclass
class Delivery:
    """A message in a handler now, since when, and how long its consumer may hold it."""

    offset: int
    since_s: float
    allowed_s: float


@dataclass
class Progress:
    """A partition's position as the lag passes saw it, and since when it has not moved."""

    position: int
    end: int
    unmoved_since_s: float
    seen_s: float


@dataclass(frozen=True)
class Stall:
    """One stalled partition of a consumer, and why, in one sentence."""

    group: str
    topic: str
    partition: int
    offset: int
    reason: str

    def as_json(self) -> dict[str, object]:
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "reason": self.reason,
        }


def retrying(failing: Failing, rules: StallRules, now_s: float) -> str | None:
    """Why a partition retrying one message is stalled, or None while it is not yet."""
    for_s = now_s - failing.first_s
    if failing.count <= rules.failures and for_s < rules.after_s:
        return None
    return (
        f"the message at offset {failing.offset} failed {failing.count} times in "
        f"{for_s:.0f} s and is still retried (last error: {failing.error})"
    )


def holding(delivery: Delivery, rules: StallRules, now_s: float) -> str | None:
    """Why a partition whose handler holds one message too long is stalled, or None."""
    for_s = now_s - delivery.since_s
    if for_s < max(rules.after_s, delivery.allowed_s):
        return None
    return f"a handler has held the message at offset {delivery.offset} for {for_s:.0f} s"


def not_moving(progress: Progress, in_handler: bool, rules: StallRules) -> str | None:
    """Why a partition whose position stays put while messages wait is stalled, or None.

    Judged from what the lag passes saw (`seen_s`), so a pass that cannot run (the broker is
    away) neither makes nor clears a stall."""
    lag = progress.end - progress.position
    unmoved_s = progress.seen_s - progress.unmoved_since_s
    if lag <= 0 or in_handler or unmoved_s < rules.after_s:
        return None
    return (
        f"{lag} messages wait and its position ({progress.position}) has not moved "
        f"for {unmoved_s:.0f} s"
    )


def describe(error: BaseException) -> str:
    """`ConnectionError: the store did not answer`, cut to 200 characters."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return text if len(text) <= 200 else text[:199] + "…"


class StallWatch:
    """What is known of every partition a service consumes; `stalls()` says which stall."""

    def __init__(
        self, rules: StallRules | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rules = rules or StallRules()
        self.clock = clock
        self.failing: dict[PartitionKey, Failing] = {}
        self.deliveries: dict[PartitionKey, Delivery] = {}
        self.progress: dict[PartitionKey, Progress] = {}
        self._reported: set[PartitionKey] = set()

    def delivered(self, key: PartitionKey, offset: int, allowed_s: float = 0.0) -> None:
        """A message of `key` at `offset` goes to its handler now."""
        self.deliveries[key] = Delivery(offset, self.clock(), allowed_s)

    def failed(self, key: PartitionKey, offset: int, error: BaseException) -> None:
        """The handler of the message at `offset` failed; it will be delivered again."""
        self.deliveries.pop(key, None)
        failing = self.failing.get(key)
        if failing is None or failing.offset != offset:
            self.failing[key] = Failing(offset, self.clock(), 1, describe(error))
            return
        failing.count += 1
        failing.error = describe(error)

    def went_through(self, key: PartitionKey) -> None:
        """The message in the handler of `key` is done with (handled, dead-lettered, skipped)."""
        self.deliveries.pop(key, None)
        self.failing.pop(key, None)

    def left(self, key: PartitionKey) -> None:
        """The message left its handler without an outcome (shutdown): not in a handler now."""
        self.deliveries.pop(key, None)

    def saw(self, key: PartitionKey, position: int, end: int) -> None:
        """A lag pass saw `key` at `position`, with `end` the partition's end offset."""
        now_s = self.clock()
        before = self.progress.get(key)
        moved = before is None or before.position != position or end <= position
        since_s = now_s if moved or before is None else before.unmoved_since_s
        self.progress[key] = Progress(position, end, since_s, now_s)

    def keep_only(self, assigned: Iterable[PartitionKey]) -> None:
        """Forget the partitions not in `assigned` (moved to another member, or stopped)."""
        kept = set(assigned)
        for known in (self.failing, self.deliveries, self.progress):
            for key in known.keys() - kept:
                del known[key]

    def stalls(self) -> list[Stall]:
        """Every stalled partition now, in (group, topic, partition) order."""
        now_s = self.clock()
        found = []
        for key in sorted(self.failing.keys() | self.deliveries.keys() | self.progress.keys()):
            stall = self._stall_of(key, now_s)
            if stall is not None:
                found.append(stall)
        return found

    def _stall_of(self, key: PartitionKey, now_s: float) -> Stall | None:
        failing, delivery = self.failing.get(key), self.deliveries.get(key)
        progress = self.progress.get(key)
        if failing is not None and (reason := retrying(failing, self.rules, now_s)):
            return Stall(*key, failing.offset, reason)
        if delivery is not None and (reason := holding(delivery, self.rules, now_s)):
            return Stall(*key, delivery.offset, reason)
        in_handler = delivery is not None
        if progress is not None and (reason := not_moving(progress, in_handler, self.rules)):
            return Stall(*key, progress.position, reason)
        return None

    def log_changes(self) -> list[Stall]:
        """The stalls now; a partition that stalls is logged once (a warning), and again
        (info) when it moves on."""
        stalls = self.stalls()
        now = {(stall.group, stall.topic, stall.partition): stall for stall in stalls}
        for key in now.keys() - self._reported:
            stall = now[key]
            logger.warning("consumer stalled: %s", stall.reason, extra=stall.as_json())
        for group, topic, partition in self._reported - now.keys():
            logger.info(
                "consumer moves on again",
                extra={"group": group, "topic": topic, "partition": partition},
            )
        self._reported = set(now)
        return stalls
