"""The explorer's replay reads real topics from the beginning to where they ended at start, and
one operation's history from its partitions up to where the explorer has read them."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.events import Event, TopicNames, encode
from discospace.explorer.service.ownership import LogHistory
from discospace.explorer.service.placement import partition_of
from discospace.runtime.positions import ReadPositions
from discospace.runtime.replay import replay
from discospace.testing.kafka import create_topics, delete_topics

pytestmark = pytest.mark.integration


async def _produce(bootstrap: str, topic: str, values: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for key, value in values:
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()


async def test_replay_folds_every_event_up_to_the_end_and_skips_unreadable_messages(
    kafka_bootstrap, small_space, make_request
):
    topics = TopicNames.unique("explorer-replay")
    await create_topics(kafka_bootstrap, {topics.operations: 3, topics.spaces: 1})
    try:
        requests = [make_request(small_space, op=f"op-{n}") for n in range(7)]
        await _produce(
            kafka_bootstrap,
            topics.operations,
            [(r.key(), encode(r)) for r in requests] + [(b"op-0", b"not json")],
        )
        await _produce(kafka_bootstrap, topics.spaces, [(small_space.key(), encode(small_space))])
        folded: list[Event] = []
        report = await replay(kafka_bootstrap, [topics.spaces, topics.operations], folded.append)
        assert (report.events, report.skipped) == (8, 1)
        assert sorted(e.event_id for e in folded) == sorted(
            [small_space.event_id, *(r.event_id for r in requests)]
        )
    finally:
        await delete_topics(kafka_bootstrap, [topics.operations, topics.spaces])


async def test_replay_of_topics_that_do_not_exist_yet_folds_nothing(kafka_bootstrap):
    topics = TopicNames.unique("explorer-replay")
    folded: list[Event] = []
    report = await replay(kafka_bootstrap, [topics.operations, topics.measurements], folded.append)
    assert (report.events, folded) == (0, [])


async def test_an_operations_history_is_read_back_from_its_partitions_up_to_the_folded_positions(
    kafka_bootstrap, small_space, make_request
):
    topics = TopicNames.unique("explorer-history")
    await create_topics(kafka_bootstrap, {topics.operations: 3, topics.measurements: 3})
    try:
        requests = [make_request(small_space, op=f"op-{n}") for n in range(9)]
        await _produce(kafka_bootstrap, topics.operations, [(r.key(), encode(r)) for r in requests])
        positions = ReadPositions()
        for partition, records in (await _read_all(kafka_bootstrap, topics.operations)).items():
            for record in records:
                positions.saw(record.topic, partition, record.offset)
        late = requests[4].model_copy(update={"event_id": "late", "requested_by": "late"})
        await _produce(kafka_bootstrap, topics.operations, [(late.key(), encode(late))])

        history = LogHistory(kafka_bootstrap, topics, positions)

        assert await history("op-4") == [requests[4]]
        assert await history("op-missing") == []
    finally:
        await delete_topics(kafka_bootstrap, [topics.operations, topics.measurements])


async def _read_all(bootstrap: str, topic: str):
    """Every record of `topic` by partition, checking each lies where `partition_of` says."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=2000)
    finally:
        await consumer.stop()
    by_partition = {tp.partition: records for tp, records in batches.items()}
    for partition, records in by_partition.items():
        assert {partition_of(r.key.decode(), 3) for r in records} == {partition}
    return by_partition
