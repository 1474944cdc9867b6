"""One subscription to every topic of the deployment, in batches, resuming from the store's offsets.

The projector reads the fixed topics and every pool's measure topic through one pattern
subscription (one consumer group, `<prefix>.projector`), a FastStream batch subscriber: each
`getmany` (up to `fetch_max_records` records, waiting up to `fetch_wait_ms` for them) is one
call of the handler, so FastStream's per-message work (middlewares, dependency injection,
logging) is paid once per batch, and the handler decodes each record once itself. The decoder
below hands the records over as they are: no JSON parse by FastStream, no pydantic cast of the
body. (A `KafkaMessage` parameter, FastStream's `Context("message")`, would cost a thread hop
per call: fast_depends resolves every `CustomField` through its synchronous `use`, which
`fast_depends.utils.run_async` sends to `run_in_threadpool`, i.e. `anyio.to_thread.run_sync`.
Nothing here asks FastStream for context.) While records flow, each fetch asks the broker for
`fetch_min_bytes` (or `fetch_max_wait_ms`), and for one byte once idle (`runtime.fetching`).

When the group assigns it partitions,
it seeks each one to the offset the store recorded with what it wrote (the beginning when the
store has none, e.g. a fresh store that must be rebuilt from the topics). Kafka's committed
offsets are only informational (consumer lag on dashboards): they are committed in the
background (`AckPolicy.ACK_FIRST`), without a round trip to the broker per message, and may run
ahead of what is written, which is why they are never trusted. An unreadable record is
dead-lettered by the handler (`handlers.on_records`) with the runtime's dead letter (reason,
original bytes), as every other service does through the runtime's middleware, which passes
over batches.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, cast

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from faststream.kafka.subscriber.usecase import LogicSubscriber
from faststream.message import StreamMessage
from faststream.middlewares import AckPolicy
from pydantic import SkipValidation

from discospace.events import Event, EventDecodeError, Topic, TopicNames
from discospace.projector.adapters import StoreWorker
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.handlers import DeadLetter, ProjectorDeps, Record, on_records
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service
from discospace.runtime.deadletter import DeadLetterPolicy
from discospace.runtime.fetching import adapt_on_start

logger = logging.getLogger("discospace.projector.consumer")


def every_topic_pattern(topics: TopicNames) -> str:
    """A regular expression matching the fixed topics and every pool's measure topic."""
    fixed = "|".join(re.escape(topic.value) for topic in Topic if topic is not Topic.MEASURE)
    measure = rf"{re.escape(Topic.MEASURE.value)}\.[A-Za-z0-9_-]+"
    return rf"^{re.escape(topics.prefix)}\.({fixed}|{measure})$"


class ResumeFromStore(ConsumerRebalanceListener):
    """Seeks newly assigned partitions to the store's offsets; writes what is buffered first."""

    def __init__(
        self,
        store: StoreWorker,
        buffer: ProjectionBuffer,
        consumer: Callable[[], AIOKafkaConsumer | None],
    ) -> None:
        self.store = store
        self.buffer = buffer
        self.consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        try:
            await self.buffer.flush()
        except Exception:
            logger.exception("buffered events not written before a rebalance; read again later")

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        consumer = self.consumer()
        if consumer is None or not assigned:
            return
        positions = self.store.positions()  # no await before seeking: nothing is fetched yet
        unknown = []
        for partition in assigned:
            offset = positions.get((partition.topic, partition.partition))
            if offset is None:
                unknown.append(partition)
            else:
                consumer.seek(partition, offset)
        if unknown:
            await consumer.seek_to_beginning(*unknown)
        await _say_beyond_the_end(consumer, assigned, positions)
        logger.info("resumed %d partitions from the store's offsets", len(assigned))
        await self.buffer.flush()
        await self.store.reload_positions()


async def _say_beyond_the_end(
    consumer: AIOKafkaConsumer,
    assigned: set[TopicPartition],
    positions: Mapping[tuple[str, int], int],
) -> None:
    """Log, as an error, a partition whose offset recorded in the store lies beyond the end of
    its log: the topic was deleted and made again, or the store was filled from another Kafka
    cluster. Its events below that offset would be taken as read and never projected (the
    views would miss them in silence): clear the store, or give the projector another one."""
    recorded = {
        p: positions[(p.topic, p.partition)]
        for p in assigned
        if (p.topic, p.partition) in positions
    }
    if not recorded:
        return
    try:
        ends = await consumer.end_offsets(list(recorded))
    except Exception as error:  # an answer the broker did not give now is no reason to stop
        logger.warning("could not compare the store's offsets with the log's ends: %s", error)
        return
    for partition, offset in sorted(recorded.items()):
        end = ends.get(partition)
        if end is not None and offset > end:
            logger.error(
                "the store recorded offset %d of %s/%d, beyond the end of its log (%d): the "
                "topic was made again or the store comes from another Kafka cluster; the events "
                "below %d are taken as read and not projected: clear the store, or give the "
                "projector another (DISCOSPACE_STORE_DATABASE)",
                offset,
                partition.topic,
                partition.partition,
                end,
                offset,
            )


def subscribe_to_everything(
    service: Service, settings: ProjectorSettings, deps: ProjectorDeps
) -> LogicSubscriber[Any]:
    """The batch subscription to every topic of `service`'s deployment, handled by
    `handlers.on_records` over `deps`."""
    topics = service.topics
    service.topics_used.update(topics.fixed())
    for topic in topics.fixed():
        service.metrics.show_consumed(service.prometheus, service.name, topic)
    holder: dict[str, Any] = {}
    subscriber: LogicSubscriber[Any] = service.broker.subscriber(
        pattern=every_topic_pattern(topics),
        group_id=service.settings.consumer_group,
        ack_policy=AckPolicy.ACK_FIRST,  # commits in the background: only the store's offsets count
        auto_offset_reset="earliest",
        batch=True,
        max_records=settings.fetch_max_records,
        batch_timeout_ms=settings.fetch_wait_ms,
        fetch_max_wait_ms=settings.fetch_max_wait_ms,
        fetch_min_bytes=settings.fetch_min_bytes,
        decoder=records_as_they_are,
        listener=ResumeFromStore(deps.store, deps.buffer, lambda: holder["subscriber"].consumer),
        description="Every event of every topic: the fixed topics and every pool's measure "
        "topic, into the store.",
    )
    holder["subscriber"] = subscriber
    adapt_on_start(subscriber, service.settings.fetch_idle_wait_ms)
    subscriber(batch_handler(deps))
    return subscriber


async def records_as_they_are(message: StreamMessage[Any]) -> tuple[Record, ...]:
    """The batch's Kafka records, undecoded: `on_records` decodes each one once."""
    return tuple(message.raw_message)


def batch_handler(deps: ProjectorDeps) -> Callable[[Any], Awaitable[None]]:
    """`on_records` over `deps`, as FastStream calls a batch handler: the batch alone.

    Its parameter is annotated as what each message of the subscription holds, an `Event`,
    which is what the AsyncAPI document in `proto/` tells a producer; `SkipValidation` keeps
    FastStream's pydantic layer from checking it, so the batch of records the decoder hands
    over goes through untouched and `on_records` decodes each record once."""

    async def on_event(records: Annotated[Event, SkipValidation]) -> None:
        await on_records(cast("Sequence[Record]", records), deps)

    return on_event


def dead_letter_to(service: Service) -> DeadLetter:
    """How the projector sets an unreadable record aside: with the runtime's own dead-letter
    policy (its publisher to the deployment's dead-letter topic, its consumer name, clock and
    size limit), counted like the runtime counts it."""
    policy = _dead_letter_policy(service)

    async def dead_letter(record: Record, error: EventDecodeError) -> None:
        await policy.send(record, error.reason)
        service.metrics.dead_lettered.labels(reason_kind=error.kind).inc()
        logger.warning(
            "dead-lettered a message: %s",
            error.reason,
            extra={"topic": record.topic, "partition": record.partition, "offset": record.offset},
        )

    return dead_letter


def _dead_letter_policy(service: Service) -> DeadLetterPolicy:
    """The policy `create_service` gave the broker (a middleware of every subscriber)."""
    for middleware in service.broker.config.broker_middlewares:
        if isinstance(middleware, DeadLetterPolicy):
            return middleware
    raise LookupError(f"{service.name}: the runtime gave the broker no dead-letter policy")
