"""What happens to a message after its handler ran, or could not run.

The broker middleware of this module decides, once for every service:

- handled: its offset is noted for the consumer group's next commit (`committing.py`);
- not an event this code can read (not JSON, unknown type, unreadable version, fails the
  schema, or anything else reading it raised): published to the dead-letter topic as
  `DeadLettered` with the reason and the original bytes (cut short, with their size and sha256,
  where the whole would not fit the message size limit), counted, then committed, and the
  consumer moves on;
- a valid event that no handler of this consumer takes: committed and counted as ignored;
- a message the start-up fold of a consumer without a group read already (`AlreadyFolded`):
  passed over in silence;
- the handler raised (`failures.py` tells the two cases apart):
  - a transient failure of a dependency (the store, the broker): not committed; after a pause
    (doubling from `retry_backoff_s` up to `retry_backoff_max_s`) the message is delivered
    again, without bound: nothing is lost, and /health names a consumer that keeps at it;
  - any other error (a poison message for this handler): delivered again the same way up to
    `handler_max_attempts` tries in all, then dead-lettered with the reason (the error's type
    and message, and the number of tries) and committed, so the partition moves on.

A message is delivered again by seeking its partition back to it (this middleware does it for
every consumer: their FastStream ack policy is MANUAL), so none of them skips a message whose
handler failed; its offset is not noted for a commit until it is done with.

It also tells the service's `StallWatch` when a message goes to its handler, when its handler
failed (it will come again) and when it was done with (handled or set aside), so /health can
name a consumer that keeps retrying one message (`stalls.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any

from aiokafka import ConsumerRecord, TopicPartition
from aiokafka import errors as kafka_errors
from aiokafka.errors import IllegalStateError
from faststream import BaseMiddleware
from faststream._internal.context.repository import ContextRepo
from faststream.exceptions import HandlerException
from faststream.kafka.subscriber.usecase import LogicSubscriber

from discospace.events import MAX_MESSAGE_BYTES, DeadLettered, EventDecodeError, EventTooLargeError
from discospace.events.factory import Clock
from discospace.runtime.committing import commits_of
from discospace.runtime.consuming import AlreadyFolded
from discospace.runtime.failures import Attempts, Verdict
from discospace.runtime.lag import group_of
from discospace.runtime.metrics import HANDLER_FAILED, RuntimeMetrics
from discospace.runtime.stalls import PartitionKey, StallWatch, describe

IGNORED_KIND = "unexpected_type"
"""The decode error kind of a valid event no handler takes: ignored, never dead-lettered."""

KAFKA_MAX_POLL_INTERVAL_MS = 300_000
"""aiokafka's default: how long a handler may hold one message before the consumer is dropped."""
STOP_POLL_S = 0.1
"""How often a pause before redelivery looks whether its consumer is stopping."""
logger = logging.getLogger("discospace.runtime.deadletter")


@dataclass(frozen=True)
class DeadLetterPolicy:
    """Everything the middleware needs, shared by every message of one service."""

    publish: Callable[[DeadLettered], Awaitable[None]]
    consumer: str
    metrics: RuntimeMetrics
    clock: Clock
    attempts: Attempts = field(default_factory=Attempts)
    """The failures in a row of each partition's message, and the retry policy."""
    max_message_bytes: int = MAX_MESSAGE_BYTES
    watch: StallWatch | None = None
    done: Sequence[Callable[[str, int, int], None]] = ()
    """Told (topic, partition, offset) of every message done with (`Service.done_with`)."""

    def __call__(self, msg: Any, /, *, context: ContextRepo) -> DeadLetterMiddleware:
        """FastStream builds one middleware per message through this call."""
        return DeadLetterMiddleware(msg, context=context, policy=self)

    async def send(self, record: ConsumerRecord[Any, Any], reason: str) -> None:
        """Publish `record`'s dead letter; without the original when the dead-letter topic
        refuses it as too large (it takes smaller messages than this service's limit: its size
        and SHA-256 stay), where the letter was refused, and the message redelivered, for good."""
        letter = self.dead_letter(record, reason)
        try:
            await self.publish(letter)
        except (EventTooLargeError, kafka_errors.MessageSizeTooLargeError) as refused:
            if not letter.original_base64:
                raise
            logger.warning(
                "the dead letter with its original was refused (%s): sent without it",
                describe(refused),
                extra=_position(record),
            )
            await self.publish(letter.without_original())

    def dead_letter(self, record: ConsumerRecord[Any, Any], reason: str) -> DeadLettered:
        """The dead letter of `record`, set aside by this service for `reason`."""
        return DeadLettered.of_message(
            original=record.value or b"",
            key=record.key,
            source_topic=record.topic,
            source_partition=record.partition,
            source_offset=record.offset,
            consumer=self.consumer,
            reason=reason,
            occurred_at=self.clock(),
            max_message_bytes=self.max_message_bytes,
        )


class DeadLetterMiddleware(BaseMiddleware):
    """Per-message scope; see the module docstring for the decisions it takes."""

    def __init__(self, msg: Any, /, *, context: ContextRepo, policy: DeadLetterPolicy) -> None:
        super().__init__(msg, context=context)
        self.policy = policy

    async def on_receive(self) -> None:
        watched = self._watched()
        if watched is not None:
            watch, key, offset = watched
            watch.delivered(key, offset, self._allowed_s())

    async def after_processed(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> bool | None:
        """True (the error is dealt with: commit) when the message was set aside or skipped."""
        record = self.msg
        if isinstance(exc_val, AlreadyFolded):
            self._done_with()
            return True
        if not isinstance(record, ConsumerRecord):
            return False
        if exc_val is None or isinstance(exc_val, HandlerException):
            self._done_with()  # handled (FastStream's own ack signals included)
            return False
        if not isinstance(exc_val, Exception):
            self._left()  # cancelled (shutdown): no outcome, handed back uncommitted
            return False
        try:
            decided = await self._decide(record, exc_val)
        except Exception as error:  # setting it aside failed: the message comes again
            verdict = self.policy.attempts.failed(*self._at(record), error)
            # the dead-letter topic is a dependency: its failure is waited out with the
            # backoff, whatever kind (a verdict to give up paused 0 s: redelivered at once,
            # for good, its partition blocked in a busy loop)
            policy = self.policy.attempts.policy
            waited = replace(
                verdict, transient=True, give_up=False, pause_s=policy.pause_s(verdict.failures)
            )
            await self._hand_back(record, error, waited)
            raise
        return decided

    async def _decide(self, record: ConsumerRecord[Any, Any], error: Exception) -> bool:
        if isinstance(error, EventDecodeError):
            await self._set_aside(record, error)
            self._done_with()
            return True
        verdict = self.policy.attempts.failed(*self._at(record), error)
        self.policy.metrics.handler_failures.labels(exception=type(error).__name__).inc()
        if verdict.give_up:
            await self._dead_letter_failed(record, verdict)
            self._done_with()
            return True
        await self._hand_back(record, error, verdict)
        return False

    async def _hand_back(
        self, record: ConsumerRecord[Any, Any], error: Exception, verdict: Verdict
    ) -> None:
        """Tell the watch, log, pause, and seek back: the message is delivered again."""
        self._tell_failed(error)
        setattr(error, _REPORTED, True)  # logged here: FastStream's record of it is left out
        if verdict.transient:
            logger.warning(
                "a dependency failed (%s); the message will be delivered again in %.1f s",
                verdict.error,
                verdict.pause_s,
                extra=_position(record) | {"failures": verdict.failures},
            )
        else:
            logger.error(
                "handler failed (try %d of %d); the message will be delivered again in %.1f s",
                verdict.attempts,
                self.policy.attempts.policy.max_attempts,
                verdict.pause_s,
                exc_info=error,
                extra=_position(record) | {"failures": verdict.failures},
            )
        await pause(verdict.pause_s, self.context.get("handler_"))
        self._seek_back(record)

    def _seek_back(self, record: ConsumerRecord[Any, Any]) -> None:
        """Move the consumer's position back to `record`, so it is read again (a consumer
        group's nack does the same; a consumer without one would move on)."""
        consumer = getattr(self.context.get("handler_"), "consumer", None)
        seek = getattr(consumer, "seek", None)
        if seek is not None:
            with contextlib.suppress(IllegalStateError):  # the partition was taken away
                seek(TopicPartition(record.topic, record.partition), record.offset)

    def _at(self, record: ConsumerRecord[Any, Any]) -> tuple[Hashable, int]:
        """The key of `record`'s partition for `Attempts` (its subscriber's, so two consumers
        of one topic count apart), and its offset."""
        subscriber = self.context.get("handler_")
        return (id(subscriber), record.topic, record.partition), record.offset

    def _done_with(self) -> None:
        """The message went through or was set aside: the partition moves on (its offset is
        committed soon, for a consumer group: `committing.py`)."""
        if isinstance(self.msg, ConsumerRecord):
            self.policy.attempts.done(self._at(self.msg)[0])
            commits = commits_of(self.context.get("handler_"))
            if commits is not None:
                commits.done(self.msg.topic, self.msg.partition, self.msg.offset)
            for tell in self.policy.done:
                tell(self.msg.topic, self.msg.partition, self.msg.offset)
        watched = self._watched()
        if watched is not None:
            watched[0].went_through(watched[1])

    def _tell_failed(self, error: Exception) -> None:
        watched = self._watched()
        if watched is not None:
            watch, key, offset = watched
            watch.failed(key, offset, error)

    def _left(self) -> None:
        watched = self._watched()
        if watched is not None:
            watched[0].left(watched[1])

    def _watched(self) -> tuple[StallWatch, PartitionKey, int] | None:
        """The watch, (group, topic, partition) of the message as the lag passes name it, and
        its offset; None for a message that is not a Kafka record of a subscriber."""
        subscriber = self.context.get("handler_")
        record = self.msg
        if self.policy.watch is None or not isinstance(record, ConsumerRecord):
            return None
        if not isinstance(subscriber, LogicSubscriber):
            return None
        key = (group_of(subscriber, self.policy.consumer), record.topic, record.partition)
        return self.policy.watch, key, record.offset

    def _allowed_s(self) -> float:
        """How long Kafka lets the handler hold this message (its consumer's max poll interval)."""
        subscriber = self.context.get("handler_")
        consumer = getattr(subscriber, "consumer", None)
        interval = getattr(consumer, "_max_poll_interval_ms", KAFKA_MAX_POLL_INTERVAL_MS)
        return interval / 1000 if isinstance(interval, int | float) else 0.0

    async def _set_aside(self, record: ConsumerRecord[Any, Any], error: EventDecodeError) -> None:
        if error.kind == IGNORED_KIND:
            self.policy.metrics.ignored.labels(event_type=error.type_name or "unknown").inc()
            return
        await self._publish(record, error.reason, error.kind)

    async def _dead_letter_failed(self, record: ConsumerRecord[Any, Any], verdict: Verdict) -> None:
        await self._publish(record, verdict.reason, HANDLER_FAILED)

    async def _publish(self, record: ConsumerRecord[Any, Any], reason: str, kind: str) -> None:
        await self.policy.send(record, reason)
        self.policy.metrics.dead_lettered.labels(reason_kind=kind).inc()
        logger.warning(
            "dead-lettered a message: %s", reason, extra=_position(record) | {"reason_kind": kind}
        )


_REPORTED = "_discospace_reported"
"""Set on a handler's error this middleware logged when it handed its message back."""


class ReportedHere(logging.Filter):
    """Leaves out a record of an error this middleware already logged with its outcome (the
    message delivered again in so many seconds): the error goes on to FastStream's logging
    middleware, which logs every handler error again, at ERROR with its traceback, even a
    transient one this middleware logged as a warning. Installed on the broker's logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not getattr(error, _REPORTED, False)


async def pause(seconds: float, subscriber: object) -> None:
    """Wait `seconds` before a failed message is delivered again, or less when `subscriber`
    stops meanwhile (shutdown): the message is then handed back at once, uncommitted, instead
    of holding the shutdown for its graceful timeout."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if getattr(subscriber, "running", True) is False:
            return
        await asyncio.sleep(min(left, STOP_POLL_S))


def _position(record: ConsumerRecord[Any, Any]) -> dict[str, Any]:
    return {"topic": record.topic, "partition": record.partition, "offset": record.offset}
