"""Sends left unconfirmed by handlers (`confirming.py`), and commits that wait for them
(`committing.py`), against futures the test answers and a fake aiokafka consumer."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaTimeoutError
from faststream.kafka import KafkaBroker, TestKafkaBroker

from discospace.events import ActuatorRegistered
from discospace.runtime import ServiceSettings, create_service
from discospace.runtime.committing import OffsetCommits
from discospace.runtime.confirming import SendFailedError, Unconfirmed, deferring_to
from discospace.runtime.consuming import Consumer
from discospace.runtime.metrics import RuntimeMetrics
from discospace.runtime.publishing import EventPublisher

from .conftest import announcement

A = TopicPartition("t", 0)


class FakeConsumer:
    def __init__(self) -> None:
        self.commits: list[dict[TopicPartition, int]] = []

    def assignment(self) -> set[TopicPartition]:
        return {A}

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.commits.append(dict(offsets))


async def _turns(n: int = 20) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def _sent(unconfirmed: Unconfirmed, count: int) -> list[asyncio.Future[None]]:
    """`count` sends left to `unconfirmed`, which the test answers."""
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[None]] = [loop.create_future() for _ in range(count)]
    for future in futures:
        unconfirmed.track(future)
    return futures


async def test_a_commit_waits_until_the_sends_made_before_it_are_confirmed() -> None:
    unconfirmed = Unconfirmed()
    consumer = FakeConsumer()
    commits = OffsetCommits(lambda: consumer, unconfirmed.settle)
    first, second = _sent(unconfirmed, 2)
    commits.done("t", 0, 7)
    await _turns()
    assert consumer.commits == [], "committed before its message's sends were confirmed"
    first.set_result(None)
    await _turns()
    assert consumer.commits == []
    second.set_result(None)
    await _turns()
    await commits.stop()

    assert consumer.commits == [{A: 8}]
    assert unconfirmed.pending == 0
    assert unconfirmed.confirmed == 2


async def test_settle_waits_for_the_sends_pending_when_it_began_not_for_later_ones() -> None:
    """A commit settles after it took its offsets: what is pending then holds the sends of
    every message whose offset it took; sends made meanwhile do not hold it up for ever."""
    unconfirmed = Unconfirmed()
    [earlier] = _sent(unconfirmed, 1)
    settling = asyncio.create_task(unconfirmed.settle())
    await _turns()
    [later] = _sent(unconfirmed, 1)
    earlier.set_result(None)
    await _turns()
    assert settling.done(), "settle waits for the sends pending when it began, not for ever"
    assert not later.done()


async def test_after_a_failed_send_nothing_is_committed_and_the_failure_is_told_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    told: list[SendFailedError] = []
    unconfirmed = Unconfirmed(on_failure=told.append)
    consumer = FakeConsumer()
    commits = OffsetCommits(lambda: consumer, unconfirmed.settle)
    failing, other = _sent(unconfirmed, 2)
    commits.done("t", 0, 3)
    with caplog.at_level(logging.ERROR, logger="discospace.runtime.confirming"):
        failing.set_exception(KafkaTimeoutError("batch expired"))
        other.set_exception(KafkaTimeoutError("batch expired"))
        await _turns()
    commits.done("t", 0, 4)  # a later message, whose sends were all confirmed
    await _turns()
    with pytest.raises(SendFailedError, match="not confirmed by Kafka"):
        await commits.flush()
    await commits.stop()

    assert consumer.commits == []
    assert commits.pending == {A: 5}, "the offsets stay noted, never committed"
    assert len(told) == 1
    assert "batch expired" in str(told[0])
    said = [r for r in caplog.records if r.name == "discospace.runtime.confirming"]
    assert len(said) == 1, "the failure is logged once, not once per failed send"


async def test_a_cancelled_send_counts_as_failed() -> None:
    unconfirmed = Unconfirmed()
    [sent] = _sent(unconfirmed, 1)
    sent.cancel()
    await _turns()
    with pytest.raises(SendFailedError, match="producer closed"):
        await unconfirmed.settle()


async def test_deferring_holds_within_its_block_only() -> None:
    unconfirmed = Unconfirmed()
    assert deferring_to() is None
    with unconfirmed.deferring():
        assert deferring_to() is unconfirmed
    assert deferring_to() is None


class RecordingPublisher:
    """Stands for FastStream's publisher: records how each send was asked for."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls: list[dict[str, Any]] = []
        self.futures: list[asyncio.Future[None]] = []

    async def publish(self, message: Any, **options: Any) -> asyncio.Future[None] | None:
        self.calls.append(options)
        if not options["no_confirm"]:
            return None
        future: asyncio.Future[None] = self.loop.create_future()
        self.futures.append(future)
        return future


async def test_a_publisher_defers_inside_a_handler_and_awaits_elsewhere() -> None:
    event = announcement()
    broker = KafkaBroker()
    publisher = EventPublisher(broker, "t", ActuatorRegistered)
    recording = RecordingPublisher(asyncio.get_running_loop())
    publisher.publisher = recording  # type: ignore[assignment]
    unconfirmed = Unconfirmed()

    await publisher(event)
    with unconfirmed.deferring():
        await publisher(event)

    assert [call["no_confirm"] for call in recording.calls] == [False, True]
    assert unconfirmed.pending == 1
    recording.futures[0].set_result(None)
    await unconfirmed.settle()
    assert unconfirmed.confirmed == 1


async def test_a_consumers_handler_publishes_deferred_through_a_broker() -> None:
    """The wiring: `Consumer` wraps its handlers, a handler's publish is left to the service's
    `Unconfirmed`, and the in-memory test broker (which delivers at once) leaves nothing
    pending."""
    event = announcement()
    broker = KafkaBroker()
    unconfirmed = Unconfirmed()
    consumer = Consumer(
        broker, "in", group_id="g", metrics=RuntimeMetrics.create("t"), unconfirmed=unconfirmed
    )
    out = EventPublisher(broker, "out", ActuatorRegistered)
    seen: list[Unconfirmed | None] = []

    @consumer
    async def handle(received: ActuatorRegistered) -> None:
        seen.append(deferring_to())
        await out(received)

    async with TestKafkaBroker(broker) as test_broker:
        await test_broker.publish(event.model_dump(mode="json"), "in")

    assert seen == [unconfirmed]
    assert unconfirmed.pending == 0
    assert deferring_to() is None


async def test_the_service_shows_its_unconfirmed_sends_as_a_metric() -> None:
    service = create_service(ServiceSettings(), description="A probe.")
    [first, second] = _sent(service.unconfirmed, 2)

    def shown() -> float | None:
        return service.metrics.registry.get_sample_value("discospace_sends_unconfirmed")

    assert shown() == 2
    first.set_result(None)
    second.set_result(None)
    await _turns()
    assert shown() == 0


async def test_health_says_failed_with_the_reason_once_a_send_failed_for_good() -> None:
    service = create_service(ServiceSettings(health_timeout_s=0.5), description="A probe.")
    [sent] = _sent(service.unconfirmed, 1)
    transport = httpx.ASGITransport(app=service.app)

    async with httpx.AsyncClient(transport=transport, base_url="http://probe") as client:
        before = await client.get("/health")
        sent.set_exception(KafkaTimeoutError("no answer from the leader"))
        await _turns()
        after = await client.get("/health")

    assert before.status_code == 503  # no broker here: unreachable, not failed
    assert before.json()["status"] == "unavailable"
    assert after.status_code == 503
    assert after.json() == {
        "service": "service",
        "status": "failed",
        "kafka": "unreachable",
        "reason": "an event this service published was not confirmed by Kafka "
        "(KafkaTimeoutError: no answer from the leader)",
    }
