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

from discospace.events import MAX_MESSAGE_BYTES, DeadLettered, EventDecodeError
from discospace.events.factory import Clock
from discospace.runtime.consuming import AlreadyFolded
from discospace.runtime.metrics import RuntimeMetrics

IGNORED_KIND = "unexpected_type"
"""The decode error kind of a valid event no handler takes: ignored, never dead-lettered."""

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

    async def after_processed(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> bool | None:
        if isinstance(exc_val, AlreadyFolded):
            return True
        if exc_val is None or not isinstance(self.msg, ConsumerRecord):
            return False
        if isinstance(exc_val, EventDecodeError):
            await self._set_aside(self.msg, exc_val)
            return True
        if isinstance(exc_val, Exception) and not isinstance(exc_val, HandlerException):
            await self._pause_before_redelivery(self.msg, exc_val)
        return False

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


def _position(record: ConsumerRecord[Any, Any]) -> dict[str, Any]:
    return {"topic": record.topic, "partition": record.partition, "offset": record.offset}
