"""The Kafka fixtures against a real broker: messages really cross it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from discospace.testing.kafka import NewTopicFactory, create_topics, delete_topics

pytestmark = pytest.mark.integration


async def _produce(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        for key, value in messages:
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()


async def _consume(
    consumer: AIOKafkaConsumer, count: int, timeout_s: float = 30.0
) -> list[ConsumerRecord[bytes, bytes]]:
    records: list[ConsumerRecord[bytes, bytes]] = []

    async def collect() -> None:
        async for record in consumer:
            records.append(record)
            if len(records) == count:
                return

    await asyncio.wait_for(collect(), timeout_s)
    return records


def _consumer(bootstrap: str, topic: str, group: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )


async def test_a_message_produced_to_a_fresh_topic_reaches_a_consumer(
    kafka_bootstrap: str, new_topic: NewTopicFactory
) -> None:
    topic = await new_topic("roundtrip", partitions=1)
    await _produce(kafka_bootstrap, topic, [(b"op-1", b"hello broker")])

    consumer = _consumer(kafka_bootstrap, topic, f"{topic}.group")
    try:
        await consumer.start()
        (record,) = await _consume(consumer, 1)
    finally:
        await consumer.stop()

    assert (record.key, record.value) == (b"op-1", b"hello broker")


async def test_a_new_topic_has_the_requested_partitions_and_keeps_a_key_in_one_of_them(
    kafka_bootstrap: str, new_topic: NewTopicFactory
) -> None:
    topic = await new_topic("keyed", partitions=4)
    await _produce(kafka_bootstrap, topic, [(b"same-key", str(i).encode()) for i in range(6)])

    consumer = _consumer(kafka_bootstrap, topic, f"{topic}.group")
    try:
        await consumer.start()
        records = await _consume(consumer, 6)
        partitions = consumer.partitions_for_topic(topic)
    finally:
        await consumer.stop()

    assert partitions == {0, 1, 2, 3}
    assert len({record.partition for record in records}) == 1
    assert [record.value for record in records] == [str(i).encode() for i in range(6)]


async def test_a_consumer_group_resumes_after_the_offset_it_committed(
    kafka_bootstrap: str, new_topic: NewTopicFactory
) -> None:
    topic = await new_topic("resume", partitions=1)
    group = f"{topic}.group"
    await _produce(kafka_bootstrap, topic, [(b"k", b"first"), (b"k", b"second")])

    reader = _consumer(kafka_bootstrap, topic, group)
    await reader.start()
    try:
        (first,) = await _consume(reader, 1)
        await reader.commit({TopicPartition(topic, 0): first.offset + 1})
    finally:
        await reader.stop()

    successor = _consumer(kafka_bootstrap, topic, group)
    await successor.start()
    try:
        (resumed,) = await _consume(successor, 1)
    finally:
        await successor.stop()

    assert (first.value, resumed.value) == (b"first", b"second")


async def test_deleted_topics_disappear_and_deleting_one_already_gone_is_fine(
    kafka_bootstrap: str, fresh_topic: Callable[..., str]
) -> None:
    name = fresh_topic("scratch")
    await create_topics(kafka_bootstrap, {name: 2})
    listed_before = await _list_topics(kafka_bootstrap)

    await delete_topics(kafka_bootstrap, [name])
    await delete_topics(kafka_bootstrap, [name])

    assert name in listed_before
    assert await _eventually_gone(kafka_bootstrap, name)


async def _eventually_gone(bootstrap: str, name: str, timeout_s: float = 10.0) -> bool:
    """The broker's metadata follows the controller's decision a moment later."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while name in await _list_topics(bootstrap):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def _list_topics(bootstrap: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return await admin.list_topics()
    finally:
        await admin.close()


async def test_creating_a_topic_that_exists_is_an_error(
    kafka_bootstrap: str, new_topic: NewTopicFactory
) -> None:
    topic = await new_topic("taken", partitions=1)

    with pytest.raises(RuntimeError, match="refused topic changes"):
        await create_topics(kafka_bootstrap, {topic: 1})
