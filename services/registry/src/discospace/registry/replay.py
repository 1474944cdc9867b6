"""Folding the topics the registry's answers depend on before it answers anything.

At start the registry reads the actuators and spaces topics from their beginning up to the end
offsets they had at that moment, so the first submission it handles is judged against every
catalog and registration published before it started, not against whatever a live consumer
happened to have read by then. Messages that are not readable events are skipped (the live
consumers dead-letter them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from discospace.events import Event, EventDecodeError, decode

POLL_MS = 200


async def replay(
    bootstrap_servers: str, topics: Sequence[str], fold: Callable[[Event], None]
) -> int:
    """Fold every event of ``topics`` up to their end offsets now; return how many."""
    partitions = await _partitions(bootstrap_servers, topics)
    if not partitions:
        return 0
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        client_id="discospace-registry-replay",
        group_id=None,
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
        return await _read_to(consumer, ends, fold)
    finally:
        await consumer.stop()


async def _partitions(bootstrap_servers: str, topics: Sequence[str]) -> list[TopicPartition]:
    """Every partition of those of ``topics`` that exist; a missing topic holds nothing (and
    asking for every topic's metadata never makes a broker create one on demand)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        described = await admin.describe_topics()
    finally:
        await admin.close()
    return [
        TopicPartition(topic["topic"], partition["partition"])
        for topic in described
        if topic["topic"] in topics
        for partition in topic["partitions"]
    ]


async def _read_to(
    consumer: AIOKafkaConsumer, ends: dict[TopicPartition, int], fold: Callable[[Event], None]
) -> int:
    folded = 0
    pending = {tp for tp, end in ends.items() if end > 0}
    while pending:
        batches = await consumer.getmany(*pending, timeout_ms=POLL_MS)
        for partition, records in batches.items():
            for record in records:
                if record.offset < ends[partition]:
                    folded += _fold_one(record.value, fold)
        pending = {tp for tp in pending if await consumer.position(tp) < ends[tp]}
    return folded


def _fold_one(value: bytes | None, fold: Callable[[Event], None]) -> int:
    try:
        event = decode(value or b"")
    except EventDecodeError:
        return 0
    fold(event)
    return 1
