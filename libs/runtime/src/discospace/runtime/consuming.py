"""Subscribing typed event handlers to topics, with manual commit and duplicate dropping.

One `Consumer` is one FastStream subscriber (one member of the service's consumer group) on
one or more topics; several handlers may share it, each taking the event types named in its
first parameter's annotation:

    consumer = service.consumer(service.topics.operations)

    @consumer
    async def on_samples_requested(event: SamplesRequested) -> None: ...

A handler written as a module-level function of the event and the service's parts,
`on_x(event, deps)`, is subscribed bound to them: `consumer(bind(on_x, deps))`.

The message is decoded with `discospace.events.codec`, so a bad message raises
`EventDecodeError` and is dead-lettered by `discospace.runtime.deadletter`. The offset is
committed only after the message was handled, in the background (`committing.py`: offsets
noted while a commit is in flight go in the next one); an error seeks back so the message comes
again: without bound when a dependency failed for now, else up to `handler_max_attempts` tries
before it is dead-lettered (`deadletter.py`, `failures.py`). What a handler publishes is
confirmed by the broker before its offset is committed, not on the handler's path
(`confirming.py`).

A consumer without a group whose topics were folded at start (`folding.fold_then_follow`) is
told where that fold stopped (`Consumer.start_at`): it drops every message below those offsets
unread (`AlreadyFolded`, which the dead-letter policy passes over in silence) and moves its
position past them at once, so it hands its handlers exactly the messages the fold did not.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.errors import IllegalStateError, KafkaError
from faststream.kafka import KafkaBroker
from faststream.kafka.subscriber.usecase import LogicSubscriber
from faststream.message import StreamMessage
from faststream.middlewares import AckPolicy

from discospace.events import Event, EventDecodeError, decode, decode_as, written_type
from discospace.runtime.committing import (
    CLOSE_COMMIT_S,
    CommitBeforeRevoke,
    OffsetCommits,
    register,
)
from discospace.runtime.confirming import Unconfirmed
from discospace.runtime.failures import RetryPolicy
from discospace.runtime.fetching import adapt_on_start
from discospace.runtime.idempotence import SeenEventIds
from discospace.runtime.metrics import RuntimeMetrics

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])
logger = logging.getLogger("discospace.runtime.consuming")
R = TypeVar("R")
Partition = tuple[str, int]
"""(topic, partition)"""


class AlreadyFolded(Exception):  # noqa: N818 - a signal, not an error: the message was read
    """A message below where the start-up fold of its consumer stopped: folded already."""


class WiringError(TypeError):
    """A handler whose signature does not say which events it takes."""


class EventDecoder:
    """Decodes a message into one of the event types the consumer's handlers take."""

    def __init__(self, folded: Callable[[object], bool] = lambda record: False) -> None:
        self.accepted: tuple[type[Event], ...] = ()
        self.folded = folded

    def accept(self, event_types: tuple[type[Event], ...]) -> None:
        self.accepted += tuple(t for t in event_types if t not in self.accepted)

    async def __call__(self, message: StreamMessage[Any]) -> Event:
        if self.folded(message.raw_message):
            raise AlreadyFolded
        return decode_as(message.body, *self.accepted)


def event_types_of(handler: Callable[..., Any]) -> tuple[type[Event], ...]:
    """The event classes named by the annotation of `handler`'s first parameter."""
    parameters = list(inspect.signature(handler).parameters)
    if not parameters:
        raise WiringError(f"{handler.__name__} must take the event as its first parameter.")
    annotation = typing.get_type_hints(handler).get(parameters[0])
    options = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    if not options or not all(_is_event_class(option) for option in options):
        raise WiringError(
            f"{handler.__name__}: annotate the first parameter with event classes, "
            f"not {annotation!r}."
        )
    return tuple(options)


def bind(handler: Callable[..., Awaitable[R]], deps: object) -> Callable[..., Awaitable[R]]:
    """`handler(event, deps)` as a handler of the event alone, for `Consumer`.

    FastStream and `event_types_of` read the event types from the first parameter, so the
    bound handler shows that parameter only, its annotation resolved. (FastStream's own
    injection, `Context`, would not reach a handler called at start by `Consumer.take`.)
    """
    first, second, *_ = inspect.signature(handler).parameters.values()
    hints = typing.get_type_hints(handler)
    event = first.replace(annotation=hints[first.name], default=inspect.Parameter.empty)

    async def bound(*args: Any, **kwargs: Any) -> R:
        return await handler(*args, **kwargs, **{second.name: deps})

    functools.update_wrapper(bound, handler, updated=())
    del bound.__wrapped__  # type: ignore[attr-defined]
    bound.__annotations__ = {event.name: event.annotation, "return": hints.get("return")}
    bound.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [event], return_annotation=hints.get("return")
    )
    return bound


def _is_union(annotation: object) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _is_event_class(option: object) -> bool:
    return isinstance(option, type) and issubclass(option, Event)


def _filter_for(event_types: tuple[type[Event], ...]) -> Callable[..., Awaitable[bool]]:
    async def takes(message: StreamMessage[Any]) -> bool:
        return not message.processed and isinstance(await message.decode(), event_types)

    return takes


def _deduplicated(
    handler: Handler, seen: SeenEventIds, metrics: RuntimeMetrics
) -> Callable[..., Awaitable[Any]]:
    """`handler`, skipping events whose id it already handled; a failed one is forgotten."""
    first = next(iter(inspect.signature(handler).parameters))

    @functools.wraps(handler)
    async def once(*args: Any, **kwargs: Any) -> Any:
        event: Event = args[0] if args else kwargs[first]
        if not seen.first_time(event.event_id):
            metrics.duplicates_dropped.inc()
            return None
        try:
            return await handler(*args, **kwargs)
        except BaseException:
            seen.forget(event.event_id)
            raise

    return once


class HandlerCancelledError(Exception):
    """A handler's await was cancelled though its consumer is not stopping (it awaited a
    future or task some other code cancelled): a failure like any other, tried again, then
    dead-lettered. Left as `CancelledError`, it ended FastStream's consume loop, which catches
    `Exception` only: the consumer kept its partitions and read none of them."""


def _cancellation_as_failure(handler: Handler) -> Callable[..., Awaitable[Any]]:
    """`handler`, its `CancelledError` a `HandlerCancelledError` unless the task running it is
    itself being cancelled (a shutdown: the message is handed back uncommitted)."""

    @functools.wraps(handler)
    async def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return await handler(*args, **kwargs)
        except asyncio.CancelledError as error:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise
            raise HandlerCancelledError(
                f"{getattr(handler, '__name__', 'the handler')} awaited something that was "
                "cancelled (not a shutdown)"
            ) from error

    return guarded


def _deferring(handler: Handler, unconfirmed: Unconfirmed) -> Callable[..., Awaitable[Any]]:
    """`handler`, leaving the sends it makes to `unconfirmed` instead of awaiting each one."""

    @functools.wraps(handler)
    async def deferring(*args: Any, **kwargs: Any) -> Any:
        with unconfirmed.deferring():
            return await handler(*args, **kwargs)

    return deferring


class Consumer:
    """A subscription of the service to topics; decorate handlers with it.

    With a `group_id`, partitions are shared by the group's members and offsets are committed
    once messages are done with, several in one commit (`committing.py`). Without one, the
    consumer reads every partition from the start each time the service starts (how a service
    folds its state) and commits nothing; once told where a fold stopped (`start_at`), it reads
    on from there. `deduplicate=False` hands every message to its handler, even an event id
    handled before (for a handler that compares the copies itself). `retries`: how an event
    whose handler fails is tried again by a start-up fold (live, the service's dead-letter
    policy applies the same one). `fetch_max_wait_ms`: the longest one fetch waits at the
    broker (see `ServiceSettings.fetch_max_wait_ms`; Kafka's 500 when None);
    `fetch_idle_wait_ms`: the longer wait once the consumer is idle (`fetching.py`; None: none).
    `unconfirmed`: the service's sends not confirmed yet: its handlers' sends are left to it,
    and a commit waits for them (`confirming.py`); None: each send is awaited where it is made.
    `passed_over`: told (topic, partition, offset) of each event no handler takes, which is
    passed over before FastStream's pipeline and its middlewares (`_passed_over`).
    """

    def __init__(
        self,
        broker: KafkaBroker,
        *topics: str,
        group_id: str | None,
        metrics: RuntimeMetrics,
        pattern: str | None = None,
        description: str | None = None,
        seen_capacity: int = 100_000,
        max_poll_interval_ms: int | None = None,
        fetch_max_wait_ms: int | None = None,
        fetch_min_bytes: int = 1,
        fetch_idle_wait_ms: int | None = None,
        deduplicate: bool = True,
        retries: RetryPolicy | None = None,
        unconfirmed: Unconfirmed | None = None,
        passed_over: Sequence[Callable[[str, int, int], None]] = (),
    ) -> None:
        self.topics = topics
        self.passed_over = passed_over
        self.unconfirmed = unconfirmed
        self.retries = retries or RetryPolicy()
        self.pattern = pattern
        self.group_id = group_id
        self.handlers: list[tuple[tuple[type[Event], ...], Callable[..., Awaitable[Any]]]] = []
        self._start: dict[Partition, int] = {}
        self.decoder = EventDecoder(self._folded_already)
        self.metrics = metrics
        self.seen = SeenEventIds(seen_capacity)
        self.deduplicate = deduplicate
        options: dict[str, Any] = {"fetch_min_bytes": fetch_min_bytes}
        if max_poll_interval_ms is not None:
            options["max_poll_interval_ms"] = max_poll_interval_ms
        if fetch_max_wait_ms is not None:
            options["fetch_max_wait_ms"] = fetch_max_wait_ms
        self.commits: OffsetCommits | None = None
        if group_id:
            self.commits = OffsetCommits(
                lambda: self.subscriber.consumer,
                unconfirmed.settle if unconfirmed is not None else None,
            )
            options["listener"] = CommitBeforeRevoke(self.commits)
        # MANUAL for both: the dead-letter middleware seeks back what must come again, and a
        # group's offsets are committed by `self.commits` (committing.py), not per message.
        self.subscriber: LogicSubscriber[Any] = broker.subscriber(
            *topics,
            pattern=pattern,
            group_id=group_id,
            ack_policy=AckPolicy.MANUAL,
            auto_offset_reset="earliest",
            decoder=self.decoder,
            description=description,
            **options,
        )
        adapt_on_start(self.subscriber, fetch_idle_wait_ms)
        self._consume_one = self.subscriber.consume_one
        self.subscriber.consume_one = self._consume_unless_passed_over
        if self.commits is not None:
            register(self.subscriber, self.commits)
            self._stop_subscriber = self.subscriber.stop
            self.subscriber.stop = self._stop

    async def _consume_unless_passed_over(self, message: Any) -> None:
        """FastStream's handling of one message, unless `_passed_over` dealt with it."""
        if self._passed_over(message):
            return
        handling = _HANDLING.set((self.commits, message))
        try:
            await self._consume_one(message)
        finally:
            _HANDLING.reset(handling)

    def _passed_over(self, record: object) -> bool:
        """Whether `record` is a valid event that none of the handlers takes, and so was dealt
        with here: counted as ignored and noted for the group's commit, the outcome the
        dead-letter middleware gives it, without FastStream's per-message pipeline (its
        middlewares, context scopes and the decode error they pass along cost a few hundred
        microseconds per message; the sampler and the actuator take under half of what their
        topics carry).

        The event's type is read from the record's first bytes (`written_type`); a record not
        as `encode` writes a current event, one of a type a handler takes, one a start-up fold
        read already, and one that does not decode (a dead letter) go the usual way. Broker
        middlewares do not see what is passed over: whoever must (`ReadPositions`) is told
        through `passed_over`."""
        if not isinstance(record, ConsumerRecord) or not self.subscriber.running:
            return False
        cls = written_type(record.value)
        if cls is None or issubclass(cls, self.decoder.accepted) or self._below_start(record):
            return False
        try:
            event = decode(record.value)
        except EventDecodeError:
            return False
        if isinstance(event, self.decoder.accepted):  # the bytes named two types; JSON's last won
            return False
        self.metrics.ignored.labels(event_type=event.type).inc()
        if self.commits is not None:
            self.commits.done(record.topic, record.partition, record.offset)
        for tell in self.passed_over:
            tell(record.topic, record.partition, record.offset)
        return True

    def _below_start(self, record: ConsumerRecord[Any, Any]) -> bool:
        """Whether `record` lies below where the start-up fold of this consumer stopped."""
        return bool(self._start) and record.offset < self._start.get(
            (record.topic, record.partition), 0
        )

    async def _stop(self) -> None:
        """Stop the subscriber, committing what is noted between the end of its consuming and
        the close of its Kafka consumer.

        FastStream's subscriber stops in two steps: it stops handing out messages (waiting for
        the one in its handler), then stops its aiokafka consumer. A commit still in flight when
        the consumer closes fails ("connection closed") and cannot be made again afterwards, so
        the offsets of the last messages handled before the stop were lost, and their messages
        delivered again to the next owner. The consumer's close now commits first: the commit
        in flight ends (`flush` takes its lock), and every offset noted is committed, within
        `CLOSE_COMMIT_S` (a broker that does not answer costs a redelivery, not a hung stop).
        """
        consumer = self.subscriber.consumer
        commits = self.commits
        if consumer is not None and commits is not None:
            close = consumer.stop

            async def commit_then_close() -> None:
                try:
                    await asyncio.wait_for(commits.flush(), CLOSE_COMMIT_S)
                except TimeoutError:
                    logger.warning(
                        "offsets not committed before the consumer closed (no answer in %.0f s):"
                        " delivered again",
                        CLOSE_COMMIT_S,
                    )
                except Exception as error:  # the broker is away: delivered again
                    logger.warning(
                        "offsets not committed before the consumer closed (%s): delivered again",
                        error,
                    )
                finally:
                    await close()

            consumer.stop = commit_then_close
        await self._stop_subscriber()

    def __call__(self, handler: Handler) -> Handler:
        """Register `handler` for the event types its first parameter names."""
        event_types = event_types_of(handler)
        self.decoder.accept(event_types)
        wrapped = _cancellation_as_failure(handler)
        if self.deduplicate:
            wrapped = _deduplicated(wrapped, self.seen, self.metrics)
        if self.unconfirmed is not None:
            wrapped = _deferring(wrapped, self.unconfirmed)
        self.handlers.append((event_types, wrapped))
        self.subscriber(filter=_filter_for(event_types))(wrapped)
        return handler

    async def take(self, event: Event) -> bool:
        """Hand `event` to the first handler that takes its type, as a delivery would (the
        duplicate check included); False when none takes it."""
        for event_types, handler in self.handlers:
            if isinstance(event, event_types):
                await handler(event)
                return True
        return False

    @property
    def started(self) -> bool:
        """Whether the broker has started this consumer (it may be reading already)."""
        return self.subscriber.consumer is not None

    async def behind(self) -> int | None:
        """How many records of the partitions this consumer reads lie beyond what it has
        handed to its handlers, by the ends the broker reports now; None when it cannot say
        (not started, nothing assigned, the broker not answering)."""
        consumer = self.subscriber.consumer
        if consumer is None:
            return None
        assigned = list(consumer.assignment())
        if not assigned:
            return None
        try:
            ends = await consumer.end_offsets(assigned)
            positions = {tp: await consumer.position(tp) for tp in assigned}
        except (IllegalStateError, KafkaError, TimeoutError):
            return None
        return sum(max(0, ends[tp] - positions[tp]) for tp in assigned)

    def start_at(self, offsets: Mapping[Partition, int]) -> None:
        """Read on from `offsets` ((topic, partition) -> offset): the messages below them were
        folded before this consumer started. Partitions not named are read from the start."""
        self._start = dict(offsets)

    def _folded_already(self, record: object) -> bool:
        """Whether `record` lies below where the fold stopped; if so, move on past the rest."""
        if not isinstance(record, ConsumerRecord) or not self._below_start(record):
            return False
        partition = (record.topic, record.partition)
        start = self._start[partition]
        consumer = self.subscriber.consumer
        if consumer is not None:
            with contextlib.suppress(IllegalStateError):
                consumer.seek(TopicPartition(*partition), start)
        return True


_HANDLING: contextvars.ContextVar[tuple[OffsetCommits | None, object] | None] = (
    contextvars.ContextVar("discospace_handling", default=None)
)
"""The commits and the record of the message being handled, for `hold_commit`."""


def hold_commit() -> Callable[[], None]:
    """From a handler: keep its message's offset uncommitted after it returns, until the
    returned release is called (`OffsetCommits.hold`). The consumer goes on with the next
    messages meanwhile; a crash before the release delivers the message again. Call it last,
    just before returning: a handler that raises after it would hold the partition's commit
    until the service restarts. Outside a consumer group's handler it holds nothing."""
    handling = _HANDLING.get()
    if handling is None:
        return _nothing_held
    commits, record = handling
    if commits is None or not isinstance(record, ConsumerRecord):
        return _nothing_held
    return commits.hold(record.topic, record.partition, record.offset)


def _nothing_held() -> None:
    return None
