"""A handler that fails, on the real broker: a poison message is tried `handler_max_attempts`
times, dead-lettered with the reason and its bytes, and the partition moves on (also after a
restart, without a second dead letter); a dependency that is down holds its message, uncommitted
and never dead-lettered, /health says so, and once it is back every message is handled once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from discospace.events import (
    ActuatorRegistered,
    DeadLettered,
    TopicNames,
    decode,
    encode,
    new_event,
)
from discospace.runtime import Service, ServiceSettings, TransientError, create_service
from discospace.testing.kafka import create_topics
from discospace.testing.waiting import eventually

pytestmark = pytest.mark.integration

POISON = "worker-poison"


class Handler:
    """Handles announcements; raises ValueError on the poison one, and a transient error on
    every one while its store is down."""

    def __init__(self, *, store_down: bool = False) -> None:
        self.store_down = store_down
        self.tries: list[str] = []
        self.handled: list[str] = []

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        self.tries.append(event.worker_id)
        if self.store_down:
            raise TransientError("the store did not answer")
        if event.worker_id == POISON:
            raise ValueError(f"no pool can run {event.worker_id}")
        self.handled.append(event.worker_id)


def _service(bootstrap: str, topics: TopicNames, handler: Handler, **settings: Any) -> Service:
    defaults: dict[str, Any] = {
        "retry_backoff_s": 0.05,
        "retry_backoff_max_s": 0.4,
        "handler_max_attempts": 3,
    }
    service = create_service(
        ServiceSettings(
            kafka_bootstrap_servers=bootstrap,
            topic_prefix=topics.prefix,
            **(defaults | settings),
        ),
        description="A probe whose handler fails.",
    )
    service.consumer(topics.actuators)(handler.on_actuator_registered)
    return service


@asynccontextmanager
async def _running(service: Service) -> AsyncIterator[httpx.AsyncClient]:
    """The running service, and an HTTP client of its /health."""
    transport = httpx.ASGITransport(app=service.app)
    client = httpx.AsyncClient(transport=transport, base_url="http://probe")
    async with service.app.start_lifespan_context(), client:
        yield client


async def _until_status(client: httpx.AsyncClient, status: int) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while (answer := await client.get("/health")).status_code != status:
        assert time.monotonic() < deadline, f"/health never {status}: {answer.text}"
        await asyncio.sleep(0.1)
    body: dict[str, Any] = answer.json()
    return body


def _announcements(*workers: str) -> list[ActuatorRegistered]:
    return [
        new_event(ActuatorRegistered, actuator="probe", pool="p1", experiments=(), worker_id=w)
        for w in workers
    ]


async def _dead_letters(kafka: Any, topics: TopicNames) -> list[DeadLettered]:
    letters = [decode(record.value) for record in await kafka.read_all(topics.dead_letter)]
    assert all(isinstance(letter, DeadLettered) for letter in letters)
    return letters


@pytest.fixture
async def one_partition(kafka_bootstrap: str, topics: TopicNames) -> TopicNames:
    """This test's topics, the announcements in one partition (so order is the log's)."""
    await create_topics(kafka_bootstrap, {topics.actuators: 1})
    return topics


async def test_a_poison_message_is_dead_lettered_after_its_tries_and_the_partition_moves_on(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    handler = Handler()
    service = _service(kafka_bootstrap, topics, handler)
    before, poison, *after = _announcements("worker-0", POISON, "worker-2", "worker-3")

    async with _running(service) as health:
        await kafka.publish(before, poison, *after, topics=topics)
        await eventually(lambda: len(handler.handled) == 3)
        [letter] = await kafka.read_events(topics.dead_letter, 1)
        healthy = (await health.get("/health")).status_code

    assert handler.handled == ["worker-0", "worker-2", "worker-3"]
    assert handler.tries.count(POISON) == 3
    assert isinstance(letter, DeadLettered)
    assert letter.reason == (
        f"the handler failed 3 times, last with ValueError: no pool can run {POISON}"
    )
    assert letter.original() == encode(poison)
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (
        topics.actuators,
        0,
        1,
    )
    assert letter.consumer == "service"
    dead_lettered = service.metrics.registry.get_sample_value
    assert dead_lettered("discospace_dead_lettered_total", {"reason_kind": "handler_failed"}) == 1
    assert healthy == 200

    # A restarted service reads on after the dead-lettered message: it does not try it again.
    again = Handler()
    restarted = _service(kafka_bootstrap, topics, again)
    [later] = _announcements("worker-4")
    async with _running(restarted):
        await kafka.publish(later, topics=topics)
        await eventually(lambda: again.handled == ["worker-4"])

    assert again.tries == ["worker-4"]
    assert [letter.source_offset for letter in await _dead_letters(kafka, topics)] == [1]


async def test_a_dependency_down_holds_its_message_and_every_message_is_handled_once_it_is_back(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    handler = Handler(store_down=True)
    service = _service(kafka_bootstrap, topics, handler, stall_after_s=2.0, stall_failures=100)
    sent = _announcements("worker-0", "worker-1", "worker-2")

    async with _running(service) as health:
        await _until_status(health, 200)
        await kafka.publish(*sent, topics=topics)
        stalled = await _until_status(health, 503)
        await eventually(lambda: len(handler.tries) > 10)  # far more than handler_max_attempts
        letters_while_down = await _dead_letters(kafka, topics)
        handler.store_down = False
        await eventually(lambda: len(handler.handled) == 3)
        healthy = await _until_status(health, 200)

    [stall] = stalled["stalled"]
    assert (stall["topic"], stall["partition"], stall["offset"]) == (topics.actuators, 0, 0)
    assert "TransientError: the store did not answer" in stall["reason"]
    assert letters_while_down == []
    assert set(handler.tries[:-3]) == {"worker-0"}  # nothing behind it was read meanwhile
    assert handler.handled == ["worker-0", "worker-1", "worker-2"]
    assert healthy["status"] == "ok"
    assert await _dead_letters(kafka, topics) == []


async def test_a_service_stopped_while_its_dependency_is_down_handles_the_message_once_restarted(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    down = Handler(store_down=True)
    sent = _announcements("worker-0", "worker-1")
    pausing = _service(
        kafka_bootstrap, topics, down, retry_backoff_max_s=60.0, graceful_timeout_s=10.0
    )

    async with _running(pausing):
        await kafka.publish(*sent, topics=topics)
        await eventually(lambda: len(down.tries) >= 8)  # the pause now: 0.05 s x 2^7 = 6.4 s
        stopping = time.monotonic()
    stopped_in_s = time.monotonic() - stopping

    back = Handler()
    async with _running(_service(kafka_bootstrap, topics, back)):
        await eventually(lambda: len(back.handled) == 2)
        await asyncio.sleep(1)  # nothing more comes

    assert stopped_in_s < 3.0  # the pause ends with the consumer, not the graceful timeout
    assert set(down.tries) == {"worker-0"}
    assert down.handled == []
    assert back.handled == ["worker-0", "worker-1"]
    assert await _dead_letters(kafka, topics) == []


class Follower:
    """A fold of announcements whose handler fails on the poison one, and while told to."""

    def __init__(self) -> None:
        self.failing = 0
        self.folded: list[str] = []
        self.tries: list[str] = []

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        self.tries.append(event.worker_id)
        if event.worker_id == POISON:
            raise ValueError("not a pool")
        if self.failing:
            self.failing -= 1
            raise ConnectionError("the store did not answer")
        self.folded.append(event.worker_id)


def _follower(bootstrap: str, topics: TopicNames, follower: Follower) -> Service:
    service = create_service(
        ServiceSettings(
            kafka_bootstrap_servers=bootstrap,
            topic_prefix=topics.prefix,
            retry_backoff_s=0.05,
            handler_max_attempts=3,
        ),
        description="A probe folding announcements.",
    )
    service.follow(topics.actuators)(follower.on_actuator_registered)
    return service


async def test_a_follower_retries_a_transient_failure_and_sets_a_poison_message_aside_once(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    live = Follower()
    live.failing = 4
    sent = _announcements("worker-0", POISON, "worker-2")

    async with _running(_follower(kafka_bootstrap, topics, live)):
        await kafka.publish(*sent, topics=topics)
        await eventually(lambda: live.folded == ["worker-0", "worker-2"])
        [letter] = await kafka.read_events(topics.dead_letter, 1)

    restarted = Follower()
    restarted.failing = 2
    service = _follower(kafka_bootstrap, topics, restarted)
    async with _running(service):
        await eventually(lambda: restarted.folded == ["worker-0", "worker-2"])
        letters = await _dead_letters(kafka, topics)

    assert live.tries[:5] == ["worker-0"] * 5  # 4 transient failures, then through
    assert live.tries.count(POISON) == 3
    assert isinstance(letter, DeadLettered)
    assert letter.reason == "the handler failed 3 times, last with ValueError: not a pool"
    assert restarted.tries.count(POISON) == 3
    assert service.fold_report is not None
    assert (service.fold_report.folded, service.fold_report.failed) == (2, 1)
    assert [letter.source_offset for letter in letters] == [1]  # not set aside a second time
