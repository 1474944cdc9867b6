"""What happens to a message after its handler ran, or could not run.

The broker middleware of this module decides, once for every service:

- handled: nothing to do here; FastStream commits the offset;
- not an event this code can read (not JSON, unknown type, unreadable version, fails the
  schema, or anything else reading it raised): published to the dead-letter topic as
  `DeadLettered` with the reason and the original bytes (cut short, with their size and sha256,
  where the whole would not fit the message size limit), counted, then committed, and the
  consumer moves on;
- a valid event that no handler of this consumer takes: committed and counted as ignored;
- a message the start-up fold of a consumer without a group read already (`AlreadyFolded`):
  passed over in silence;
- any other error (a handler or the broker failed): not committed; after a pause the message
  is delivered again (FastStream's NACK_ON_ERROR seeks back to its offset).

It also tells the service's `StallWatch` when a message goes to its handler, when its handler
failed (it will come again) and when it went through, so /health can name a consumer that
keeps retrying one message (`stalls.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiokafka import ConsumerRecord
from faststream import BaseMiddleware
from faststream._internal.context.repository import ContextRepo
from faststream.exceptions import HandlerException
from faststream.kafka.subscriber.usecase import LogicSubscriber

from discospace.events import MAX_MESSAGE_BYTES, DeadLettered, EventDecodeError
from discospace.events.factory import Clock
from discospace.runtime.consuming import AlreadyFolded
from discospace.runtime.lag import group_of
from discospace.runtime.metrics import RuntimeMetrics
from discospace.runtime.stalls import PartitionKey, StallWatch

IGNORED_KIND = "unexpected_type"
"""The decode error kind of a valid event no handler takes: ignored, never dead-lettered."""

KAFKA_MAX_POLL_INTERVAL_MS = 300_000
"""aiokafka's default: how long a handler may hold one message before the consumer is dropped."""
logger = logging.getLogger("discospace.runtime.deadletter")


@dataclass(frozen=True)
class DeadLetterPolicy:
    """Everything the middleware needs, shared by every message of one service."""

    publish: Callable[[DeadLettered], Awaitable[None]]
    consumer: str
    metrics: RuntimeMetrics
    clock: Clock
    retry_backoff_s: float
    max_message_bytes: int = MAX_MESSAGE_BYTES
    watch: StallWatch | None = None

    def __call__(self, msg: Any, /, *, context: ContextRepo) -> DeadLetterMiddleware:
        """FastStream builds one middleware per message through this call."""
        return DeadLetterMiddleware(msg, context=context, policy=self)

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
        self._tell_watch(exc_val)
        try:
            return await self._decide(exc_val)
        except Exception as error:  # setting it aside failed: the message comes again
            self._tell_watch(error)
            raise

    def _tell_watch(self, error: BaseException | None) -> None:
        """Tell the stall watch how the message left its handler."""
        watched = self._watched()
        if watched is None:
            return
        watch, key, offset = watched
        if isinstance(error, Exception) and _redelivered(error):
            watch.failed(key, offset, error)
        elif error is not None and not isinstance(error, Exception):
            watch.left(key)  # cancelled (shutdown): no outcome
        else:
            watch.went_through(key)

    async def _decide(self, exc_val: BaseException | None) -> bool:
        if isinstance(exc_val, AlreadyFolded):
            return True
        if exc_val is None or not isinstance(self.msg, ConsumerRecord):
            return False
        if isinstance(exc_val, EventDecodeError):
            await self._set_aside(self.msg, exc_val)
            return True
        if isinstance(exc_val, Exception) and _redelivered(exc_val):
            await self._pause_before_redelivery(self.msg, exc_val)
        return False

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
        await self.policy.publish(self.policy.dead_letter(record, error.reason))
        self.policy.metrics.dead_lettered.labels(reason_kind=error.kind).inc()
        logger.warning(
            "dead-lettered a message: %s",
            error.reason,
            extra=_position(record) | {"reason_kind": error.kind},
        )

    async def _pause_before_redelivery(
        self, record: ConsumerRecord[Any, Any], error: Exception
    ) -> None:
        self.policy.metrics.handler_failures.labels(exception=type(error).__name__).inc()
        logger.error(
            "handler failed; the message will be delivered again",
            exc_info=error,
            extra=_position(record),
        )
        await asyncio.sleep(self.policy.retry_backoff_s)


def _redelivered(error: Exception) -> bool:
    """Whether a message whose handling raised `error` is delivered again (see the module
    docstring): not a decode error, not a fold's skip, not FastStream's own ack signals."""
    return not isinstance(error, EventDecodeError | AlreadyFolded | HandlerException)


def _position(record: ConsumerRecord[Any, Any]) -> dict[str, Any]:
    return {"topic": record.topic, "partition": record.partition, "offset": record.offset}
