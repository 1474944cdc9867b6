"""Consumer lag: how many messages this process's consumers have yet to read, per group and topic.

Every `interval_s`, `ConsumerLag` looks at every subscriber of the service's broker: the lag of
a partition the subscriber's consumer is assigned is the partition's end offset minus the
consumer's position (the offset of the next message it hands a handler); the gauge
`discospace_consumer_lag{group, topic}` holds the sum over the partitions this process owns.
Each member of a group reports only its own partitions, so `sum by (group, topic)` over the
members is the group's lag, as `kafka-consumer-groups --describe` shows it (counted from the
positions rather than the commits: a message being handled counts as read).

A consumer without a group (one that folds its topics at every start) is shown as the group
`<service> (no group)`. The topics a subscriber names are listed from the first pass, at 0
while this process owns none of their partitions, so a dashboard reads 0 rather than "No
data"; a topic whose partitions moved to another member drops back to 0. A pass that fails
is logged and the next one tries again: measuring the lag never stops a service.

Each pass also tells the service's `StallWatch` (`stalls.py`) every assigned partition's
position and end, and which partitions this process owns now; after each pass, a consumer that
began or ended a stall is logged once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import IllegalStateError
from faststream.kafka import KafkaBroker
from faststream.kafka.subscriber.usecase import LogicSubscriber
from prometheus_client import Gauge

from discospace.runtime.stalls import PartitionKey, StallWatch

Key = tuple[str, str]
"""(group, topic)"""

INTERVAL_S = 5.0
POSITION_TIMEOUT_S = 1.0
PASS_TIMEOUT_S = 5.0
"""The longest one consumer's lag may take to read (its end offsets), so a pass never hangs."""
STOP_TIMEOUT_S = 2.0
logger = logging.getLogger("discospace.runtime.lag")


class ConsumerLag:
    """Sets the lag gauge of one service every `interval_s`, from `start` until `stop`."""

    def __init__(
        self,
        broker: KafkaBroker,
        gauge: Gauge,
        service: str,
        interval_s: float = INTERVAL_S,
        watch: StallWatch | None = None,
    ) -> None:
        self.broker = broker
        self.gauge = gauge
        self.service = service
        self.interval_s = interval_s
        self.watch = watch or StallWatch()
        self._shown: set[Key] = set()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Measure now and every `interval_s` from here on, in the background."""
        self._task = asyncio.create_task(self._every_interval(), name="discospace-consumer-lag")

    async def stop(self) -> None:
        """Stop measuring; never waits more than `STOP_TIMEOUT_S` for a pass under way (a
        shutdown must not hang on a request to a consumer that is closing)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=STOP_TIMEOUT_S)
            self._task = None

    async def measure(self) -> dict[Key, int]:
        """Set the gauge from every subscriber's consumer; the lag of each (group, topic)."""
        lags: dict[Key, int] = {}
        assigned: list[PartitionKey] = []
        for subscriber in self.broker.subscribers:
            if isinstance(subscriber, LogicSubscriber):
                group = group_of(subscriber, self.service)
                for topic in subscriber.topic_names_for_subscribe:
                    lags.setdefault((group, topic), 0)
                seen = await asyncio.wait_for(_partitions_of(subscriber.consumer), PASS_TIMEOUT_S)
                for partition, position, end in seen:
                    key = (group, partition.topic)
                    lags[key] = lags.get(key, 0) + max(end - position, 0)
                    self.watch.saw((group, partition.topic, partition.partition), position, end)
                assigned += _assigned(group, subscriber.consumer)
        self.watch.keep_only(assigned)
        self._show(lags)
        return lags

    def _show(self, lags: dict[Key, int]) -> None:
        for group, topic in self._shown - lags.keys():
            self.gauge.labels(group=group, topic=topic).set(0)
        for (group, topic), lag in lags.items():
            self.gauge.labels(group=group, topic=topic).set(lag)
        self._shown |= lags.keys()

    async def _every_interval(self) -> None:
        while True:
            try:
                await self.measure()
                self.watch.log_changes()
            except Exception:
                logger.warning("consumer lag not measured; trying again", exc_info=True)
            await asyncio.sleep(self.interval_s)


def group_of(subscriber: LogicSubscriber[object], service: str) -> str:
    """The consumer group a subscriber is shown as: its own, or `<service> (no group)`."""
    return subscriber.group_id or f"{service} (no group)"


def _assigned(group: str, consumer: object) -> list[PartitionKey]:
    if not isinstance(consumer, AIOKafkaConsumer):
        return []
    return [(group, tp.topic, tp.partition) for tp in consumer.assignment()]


async def _partitions_of(consumer: object) -> list[tuple[TopicPartition, int, int]]:
    """(partition, position, end offset) of each partition the consumer is assigned and knows
    its position in."""
    if not isinstance(consumer, AIOKafkaConsumer):
        return []
    partitions = consumer.assignment()
    if not partitions:
        return []
    ends = await consumer.end_offsets(list(partitions))
    return [
        (partition, position, ends.get(partition, position))
        for partition, position in await _positions(consumer, partitions)
    ]


async def _positions(
    consumer: AIOKafkaConsumer, partitions: Iterable[TopicPartition]
) -> list[tuple[TopicPartition, int]]:
    """The position of each partition that has one now (a partition still looking for where
    to start, or taken away meanwhile, is left out until the next pass)."""
    known = []
    for partition in partitions:
        with contextlib.suppress(IllegalStateError, TimeoutError):
            position = await asyncio.wait_for(consumer.position(partition), POSITION_TIMEOUT_S)
            known.append((partition, position))
    return known
