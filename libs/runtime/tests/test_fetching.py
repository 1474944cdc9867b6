"""A consumer's fetch wait: short while records flow, long once idle (`runtime.fetching`).

On the real broker, through a service's consumer group: once idle, its fetches wait the idle
wait, and a record that arrives then is handled at once (an idle fetch covers every partition,
so the broker answers it on arrival: a 30 s idle wait would otherwise hold it for 30 s); with
records flowing again, the short wait is back. The same for the bytes a fetch asks the broker to
gather: `fetch_min_bytes` while busy, one byte once idle (else the idle fetch would wait for a
megabyte that never comes).
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.events import ActuatorRegistered, TopicNames, encode, new_event
from discospace.runtime import ServiceSettings, create_service
from discospace.runtime.fetching import IDLE_AFTER_S, adapt_fetch_wait
from discospace.testing.kafka import create_topics, delete_topics
from discospace.testing.waiting import eventually

IDLE_WAIT_MS = 30_000
SHORT_WAIT_MS = 20
BUSY_MIN_BYTES = 1_000_000
"""What a busy fetch asks for: far more than the test sends, so it returns after its wait."""


def test_a_fetcher_this_module_does_not_know_keeps_its_fixed_wait_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Consumer:
        _fetcher = object()

    with caplog.at_level(logging.WARNING, logger="discospace.runtime.fetching"):
        assert adapt_fetch_wait(Consumer(), IDLE_WAIT_MS) is False
    assert "fetch_idle_wait_ms is not applied" in caplog.text


def _announcement(tag: str) -> ActuatorRegistered:
    return new_event(ActuatorRegistered, actuator="probe", pool="p1", experiments=(), worker_id=tag)


@pytest.mark.integration
async def test_an_idle_consumer_waits_long_at_the_broker_and_still_gets_a_record_at_once(
    kafka_bootstrap: str, topics: TopicNames
) -> None:
    await create_topics(kafka_bootstrap, {topics.actuators: 3})
    settings = ServiceSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        fetch_max_wait_ms=SHORT_WAIT_MS,
        fetch_min_bytes=BUSY_MIN_BYTES,
        fetch_idle_wait_ms=IDLE_WAIT_MS,
    )
    service = create_service(settings, description="A consumer of announcements.")
    consumer = service.consumer(topics.actuators)
    handled: list[float] = []

    async def on_announcement(event: ActuatorRegistered) -> None:
        handled.append(time.monotonic())

    consumer(on_announcement)
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await producer.start()
    try:
        async with service.app.start_lifespan_context():
            await producer.send_and_wait(topics.actuators, encode(_announcement("first")))
            await eventually(lambda: len(handled) == 1, 60, "the first record never came")
            fetcher = consumer.subscriber.consumer._fetcher  # started: it handed a record over
            await eventually(
                lambda: (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes) == (IDLE_WAIT_MS, 1),
                30,
                f"no idle fetch {IDLE_AFTER_S} s after the last record",
            )

            sent = time.monotonic()
            await producer.send_and_wait(topics.actuators, encode(_announcement("second")))
            await eventually(
                lambda: len(handled) == 2,
                IDLE_WAIT_MS / 2000,
                "the record waited for the idle fetch to expire",
            )
            assert handled[1] - sent < IDLE_WAIT_MS / 2000
            await eventually(
                lambda: (
                    (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes)
                    == (SHORT_WAIT_MS, BUSY_MIN_BYTES)
                ),
                5,
                "records came, and the fetch is still the idle one",
            )
    finally:
        await producer.stop()
        await delete_topics(kafka_bootstrap, [topics.actuators])


def test_an_idle_wait_no_longer_than_the_fetch_wait_changes_nothing() -> None:
    class Fetcher:
        _fetch_max_wait_ms = SHORT_WAIT_MS
        _records: dict[object, object] = {}

        def _get_actions_per_node(self, assignment: object) -> object:
            return assignment

    class Consumer:
        _fetcher = Fetcher()

    consumer = Consumer()
    assert adapt_fetch_wait(consumer, SHORT_WAIT_MS) is False
    assert "_get_actions_per_node" not in vars(consumer._fetcher)
    assert adapt_fetch_wait(consumer, SHORT_WAIT_MS + 1) is True
    assert "_get_actions_per_node" in vars(consumer._fetcher)


def test_while_records_flow_a_fetch_asks_for_its_minimum_and_once_idle_for_one_byte() -> None:
    class Fetcher:
        _fetch_max_wait_ms = SHORT_WAIT_MS
        _fetch_min_bytes = 16_384
        _records: dict[object, object] = {"held": "records"}
        asked: list[tuple[int, int]] = []

        def _get_actions_per_node(self, assignment: object) -> object:
            self.asked.append((self._fetch_max_wait_ms, self._fetch_min_bytes))
            return assignment

    class Consumer:
        _fetcher = Fetcher()

    fetcher = Consumer._fetcher
    assert adapt_fetch_wait(Consumer(), IDLE_WAIT_MS, idle_after_s=0.05) is True
    fetcher._get_actions_per_node(None)  # records held: busy
    fetcher._records = {}
    time.sleep(0.06)
    fetcher._get_actions_per_node(None)  # none for longer than idle_after_s: idle
    fetcher._records = {"held": "again"}
    fetcher._get_actions_per_node(None)
    assert fetcher.asked == [
        (SHORT_WAIT_MS, 16_384),
        (IDLE_WAIT_MS, 1),
        (SHORT_WAIT_MS, 16_384),
    ]


@pytest.mark.integration
async def test_an_idle_consumer_asking_for_many_bytes_still_gets_a_lone_record_at_once(
    kafka_bootstrap: str, topics: TopicNames
) -> None:
    """Busy, a fetch waits for 1 MB or 20 ms; idle, it would wait 30 s for that megabyte, so it
    asks for one byte: the broker answers on the first record."""
    await create_topics(kafka_bootstrap, {topics.actuators: 3})
    consumer = AIOKafkaConsumer(
        topics.actuators,
        bootstrap_servers=kafka_bootstrap,
        fetch_min_bytes=1_000_000,
        fetch_max_wait_ms=SHORT_WAIT_MS,
        auto_offset_reset="earliest",
    )
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    try:
        await consumer.start()
        await producer.start()
        assert adapt_fetch_wait(consumer, IDLE_WAIT_MS)
        fetcher = consumer._fetcher
        await eventually(
            lambda: (fetcher._fetch_max_wait_ms, fetcher._fetch_min_bytes) == (IDLE_WAIT_MS, 1),
            30,
            f"no idle fetch {IDLE_AFTER_S} s after the start",
        )
        lone = encode(_announcement("lone"))
        sent = time.monotonic()
        await producer.send_and_wait(topics.actuators, lone)
        async with asyncio.timeout(IDLE_WAIT_MS / 2000):
            record = await consumer.getone()
        assert record.value == lone
        assert time.monotonic() - sent < IDLE_WAIT_MS / 2000
    finally:
        await consumer.stop()
        await producer.stop()
        await delete_topics(kafka_bootstrap, [topics.actuators])
