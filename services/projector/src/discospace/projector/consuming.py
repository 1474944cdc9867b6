"""One subscription to every topic of the deployment, resuming from the store's offsets.

The projector reads the fixed topics and every pool's measure topic through one pattern
subscription (one consumer group, `<prefix>.projector`). When the group assigns it partitions,
it seeks each one to the offset the store recorded with what it wrote (the beginning when the
store has none, e.g. a fresh store that must be rebuilt from the topics). Kafka's committed
offsets are only informational (consumer lag on dashboards): they are committed in the
background (`AckPolicy.ACK_FIRST`), without a round trip to the broker per message, and may run
ahead of what is written, which is why they are never trusted. Messages are decoded by the
runtime's decoder, so an unreadable one is dead-lettered by the runtime's policy like in every
other service.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from faststream.kafka.subscriber.usecase import LogicSubscriber
from faststream.middlewares import AckPolicy

from discospace.events import Topic, TopicNames, all_event_types
from discospace.projector.adapters import StoreWorker
from discospace.projector.buffering import ProjectionBuffer
from discospace.runtime import Service
from discospace.runtime.consuming import EventDecoder

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
        logger.info("resumed %d partitions from the store's offsets", len(assigned))
        await self.buffer.flush()
        await self.store.reload_positions()


def subscribe_to_everything(
    service: Service, store: StoreWorker, buffer: ProjectionBuffer
) -> LogicSubscriber[Any]:
    """The subscription to every topic of `service`'s deployment (give it `on_event`)."""
    topics = service.topics
    service.topics_used.update(topics.fixed())
    for topic in topics.fixed():
        service.metrics.show_consumed(service.prometheus, service.name, topic)
    decoder = EventDecoder()
    decoder.accept(all_event_types())
    holder: dict[str, Any] = {}
    subscriber: LogicSubscriber[Any] = service.broker.subscriber(
        pattern=every_topic_pattern(topics),
        group_id=service.settings.consumer_group,
        ack_policy=AckPolicy.ACK_FIRST,  # commits in the background: only the store's offsets count
        auto_offset_reset="earliest",
        decoder=decoder,
        listener=ResumeFromStore(store, buffer, lambda: holder["subscriber"].consumer),
        description="Every event of every topic: the fixed topics and every pool's measure "
        "topic, into the store.",
    )
    holder["subscriber"] = subscriber
    return subscriber
