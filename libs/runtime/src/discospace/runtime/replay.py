"""Reading topics from the beginning up to where they ended at start: a service's replay.

A service whose state is a fold of topics (the explorer's operations, the registry's catalogs
and spaces) folds them before it decides anything: deciding on part of the history could repeat
a decision further down the log, or answer without knowing the whole catalog. `replay` notes
the end offset of every partition, reads each from its beginning up to that offset, and hands
every event to `fold`. Messages that are not readable events are counted and skipped (the live
consumer dead-letters them). `replay_until` reads chosen partitions up to chosen offsets (the
explorer rebuilds one operation from its partitions, up to where its consumer has read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from discospace.events import Event, EventDecodeError, decode

POLL_MS = 200


@dataclass
class ReplayReport:
    """What a replay read."""

    events: int = 0
    skipped: int = 0
    """Messages that were not readable events."""


async def replay(
    bootstrap_servers: str,
    topics: Sequence[str],
    fold: Callable[[Event], None],
    *,
    client_id: str = "discospace-replay",
) -> ReplayReport:
    """Fold every event of `topics`, from the beginning up to their end offsets at call time."""
    partitions = await existing_partitions(bootstrap_servers, topics)
    if not partitions:
        return ReplayReport()
    return await _replay(bootstrap_servers, partitions, None, fold, client_id)


async def replay_until(
    bootstrap_servers: str,
    until: Mapping[tuple[str, int], int],
    fold: Callable[[Event], None],
    *,
    client_id: str = "discospace-replay",
) -> ReplayReport:
    """Fold every event of the partitions of `until` ((topic, partition) -> offset), from the
    beginning up to (not including) that offset."""
    partitions = [TopicPartition(topic, partition) for (topic, partition) in until]
    ends = {TopicPartition(topic, partition): end for (topic, partition), end in until.items()}
    if not partitions:
        return ReplayReport()
    return await _replay(bootstrap_servers, partitions, ends, fold, client_id)


async def _replay(
    bootstrap_servers: str,
    partitions: list[TopicPartition],
    ends: dict[TopicPartition, int] | None,
    fold: Callable[[Event], None],
    client_id: str,
) -> ReplayReport:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        client_id=client_id,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        return await _read_to_end(consumer, partitions, ends, fold)
    finally:
        await consumer.stop()


async def existing_partitions(
    bootstrap_servers: str, topics: Iterable[str]
) -> list[TopicPartition]:
    """Every partition of the topics that exist (a topic not created yet holds nothing).

    Asks for the metadata of every topic, never of named ones: naming a missing topic could
    make a broker that creates topics on demand create it.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        described = await admin.describe_topics()
    finally:
        await admin.close()
    wanted: dict[str, list[TopicPartition]] = {topic: [] for topic in topics}
    for topic in described:
        if topic["topic"] in wanted:
            wanted[topic["topic"]] = [
                TopicPartition(topic["topic"], p["partition"]) for p in topic["partitions"]
            ]
    return sorted((tp for tps in wanted.values() for tp in tps), key=lambda tp: tp[:2])


async def _read_to_end(
    consumer: AIOKafkaConsumer,
    partitions: list[TopicPartition],
    ends: dict[TopicPartition, int] | None,
    fold: Callable[[Event], None],
) -> ReplayReport:
    """Read `partitions` from their beginning up to `ends` (default: their end offsets now)."""
    report = ReplayReport()
    consumer.assign(partitions)
    await consumer.seek_to_beginning(*partitions)
    if ends is None:
        ends = await consumer.end_offsets(partitions)
    pending = {tp for tp in partitions if ends[tp] > await consumer.position(tp)}
    while pending:
        batches = await consumer.getmany(*pending, timeout_ms=POLL_MS)
        for partition, records in batches.items():
            for record in records:
                if record.offset < ends[partition]:
                    _fold_one(record.value, fold, report)
        pending = {tp for tp in pending if await consumer.position(tp) < ends[tp]}
    return report


def _fold_one(value: bytes | None, fold: Callable[[Event], None], report: ReplayReport) -> None:
    try:
        event = decode(value or b"")
    except EventDecodeError:
        report.skipped += 1
        return
    report.events += 1
    fold(event)
