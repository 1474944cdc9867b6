"""Reading topics from the beginning up to chosen end offsets: the loop every fold reads with.

A service whose state is a fold of topics reads them up to where they ended at start before it
decides anything (`folding.fold_then_follow`, which then goes live from exactly there). The
reading itself lives here: `read_up_to` notes nothing, it reads each partition it is given from
its beginning up to (not including) the offset given for it, in log order per partition, and
hands every record to `take`.

`replay` folds every event of whole topics up to their end offsets at call time; `replay_until`
folds chosen partitions up to chosen offsets (the explorer rebuilds one operation from its
partitions, up to where its consumer has read). Both count and skip the messages that are not
readable events, and try an event whose fold fails again by a `RetryPolicy` (a transient
failure without bound, any other up to `max_attempts` tries), then count and skip it. Neither
dead-letters anything: the live consumer does (see `folding.py` for why).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeAlias

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from discospace.events import Event, EventDecodeError, decode
from discospace.runtime.failures import RetryPolicy, Verdict, settle
from discospace.runtime.security import KafkaSecurity, client_kwargs

POLL_MS = 200

Record: TypeAlias = ConsumerRecord[bytes, bytes]
Take = Callable[[Record], Awaitable[None]]
logger = logging.getLogger("discospace.runtime.replay")


@dataclass
class ReplayReport:
    """What a replay read."""

    events: int = 0
    skipped: int = 0
    """Messages that were not readable events."""
    failed: int = 0
    """Events whose fold kept failing (not transiently): skipped."""


async def replay(
    bootstrap_servers: str,
    topics: Sequence[str],
    fold: Callable[[Event], None],
    *,
    client_id: str = "discospace-replay",
    retries: RetryPolicy | None = None,
) -> ReplayReport:
    """Fold every event of `topics`, from the beginning up to their end offsets at call time."""
    partitions = await existing_partitions(bootstrap_servers, topics)
    if not partitions:
        return ReplayReport()
    async with reader(bootstrap_servers, client_id) as consumer:
        ends = await consumer.end_offsets(partitions)
        return await _fold_up_to(consumer, ends, fold, retries or RetryPolicy())


async def replay_until(
    bootstrap_servers: str,
    until: Mapping[tuple[str, int], int],
    fold: Callable[[Event], None],
    *,
    client_id: str = "discospace-replay",
    retries: RetryPolicy | None = None,
) -> ReplayReport:
    """Fold every event of the partitions of `until` ((topic, partition) -> offset), from the
    beginning up to (not including) that offset."""
    ends = {TopicPartition(topic, partition): end for (topic, partition), end in until.items()}
    if not ends:
        return ReplayReport()
    async with reader(bootstrap_servers, client_id) as consumer:
        return await _fold_up_to(consumer, ends, fold, retries or RetryPolicy())


async def _fold_up_to(
    consumer: AIOKafkaConsumer,
    ends: Mapping[TopicPartition, int],
    fold: Callable[[Event], None],
    retries: RetryPolicy,
) -> ReplayReport:
    report = ReplayReport()

    async def take(record: Record) -> None:
        try:
            event = decode(record.value or b"")
        except EventDecodeError:
            report.skipped += 1
            return

        async def folded() -> None:
            fold(event)

        outcome = await settle(folded, retries, logger, functools.partial(where, record))
        if isinstance(outcome, Verdict):
            report.failed += 1
            logger.warning("skipped in a replay: %s", outcome.reason, extra=position(record))
            return
        report.events += 1

    await read_up_to(consumer, ends, take)
    return report


def where(record: Record) -> str:
    """`folding the event at <topic>/<partition>@<offset>`, for log lines."""
    return f"folding the event at {record.topic}/{record.partition}@{record.offset}"


def position(record: Record) -> dict[str, object]:
    """Where `record` lies, as log fields."""
    return {"topic": record.topic, "partition": record.partition, "offset": record.offset}


@asynccontextmanager
async def reader(
    bootstrap_servers: str, client_id: str, security: KafkaSecurity | None = None
) -> AsyncIterator[AIOKafkaConsumer]:
    """A consumer without a group, started for one read and stopped after it (logged in as
    `security`, or as this process's principal)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        client_id=client_id,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **client_kwargs(security),
    )
    try:  # a start that fails is stopped too: its client may hold connections
        await consumer.start()
        yield consumer
    finally:
        await consumer.stop()


async def existing_partitions(
    bootstrap_servers: str, topics: Iterable[str], security: KafkaSecurity | None = None
) -> list[TopicPartition]:
    """Every partition of the topics that exist (a topic not created yet holds nothing).

    Asks for the metadata of every topic, never of named ones: naming a missing topic could
    make a broker that creates topics on demand create it. (Where ACLs apply, "every topic"
    is every topic this principal may see.)
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, **client_kwargs(security))
    try:
        await admin.start()
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


async def read_up_to(
    consumer: AIOKafkaConsumer, ends: Mapping[TopicPartition, int], take: Take
) -> None:
    """Hand `take` every record of the partitions of `ends`, from their beginning up to (not
    including) their end offset there, in log order per partition. An empty partition, or one
    already read to its end, is not waited for."""
    partitions = list(ends)
    consumer.assign(partitions)
    await consumer.seek_to_beginning(*partitions)
    pending = {tp for tp in partitions if ends[tp] > await consumer.position(tp)}
    while pending:
        batches = await consumer.getmany(*pending, timeout_ms=POLL_MS)
        await asyncio.sleep(0)  # the fetcher asks for the next records while these are taken
        for partition, records in batches.items():
            for record in records:
                if record.offset < ends[partition]:
                    await take(record)
        pending = {tp for tp in pending if await consumer.position(tp) < ends[tp]}
