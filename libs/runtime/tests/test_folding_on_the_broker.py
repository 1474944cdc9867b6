"""Folding topics up to their end at start, then going live, on the real broker: every event
once, in log order per partition, whether it was published before the start or after."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiokafka import AIOKafkaProducer

from discospace.events import ActuatorRegistered, DeadLettered, Event, TopicNames, encode, new_event
from discospace.runtime import Service, ServiceSettings, create_service
from discospace.runtime.folding import fold_then_follow
from discospace.testing.clients import EventClient
from discospace.testing.kafka import create_topics, delete_topics
from discospace.testing.waiting import eventually

pytestmark = pytest.mark.integration

PARTITIONS = 3
"""Partition 2 of the followed topic stays empty until the service has started."""


class Producer:
    """Sends events to chosen partitions and remembers the order it sent them in."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        self.sent: dict[tuple[str, int], list[str]] = {}

    async def send(self, topic: str, partition: int, *events: Event) -> None:
        for event in events:
            await self.producer.send_and_wait(topic, encode(event), partition=partition)
            self.sent.setdefault((topic, partition), []).append(event.event_id)

    async def send_raw(self, topic: str, partition: int, value: bytes) -> None:
        await self.producer.send_and_wait(topic, value, partition=partition)


@pytest.fixture
async def producer(kafka_bootstrap: str) -> AsyncIterator[Producer]:
    sending = Producer(kafka_bootstrap)
    await sending.producer.start()
    yield sending
    await sending.producer.stop()


@pytest.fixture
async def followed(kafka_bootstrap: str, topics: TopicNames) -> AsyncIterator[TopicNames]:
    """This test's topics: the announcements topic with three partitions, created first."""
    await create_topics(kafka_bootstrap, {topics.actuators: PARTITIONS})
    yield topics
    await delete_topics(kafka_bootstrap, [*topics.fixed(), _later(topics)])


def _later(topics: TopicNames) -> str:
    """A topic the follower reads that does not exist when the service folds at start (its
    live consumer's subscription creates it)."""
    return f"{topics.prefix}.later"


def _announcements(count: int, tag: str) -> list[ActuatorRegistered]:
    return [
        new_event(
            ActuatorRegistered, actuator="probe", pool="p1", experiments=(), worker_id=f"{tag}-{n}"
        )
        for n in range(count)
    ]


class Recorder:
    """The follower's handler: every event it was handed, in order, copies included."""

    def __init__(self) -> None:
        self.handled: list[str] = []

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        self.handled.append(event.event_id)

    def by_partition(self, sent: dict[tuple[str, int], list[str]]) -> dict[tuple[str, int], list]:
        """What was handled, in handling order, split by the partition each event was sent to."""
        where = {event_id: key for key, ids in sent.items() for event_id in ids}
        split: dict[tuple[str, int], list[str]] = {key: [] for key in sent}
        for event_id in self.handled:
            split[where[event_id]].append(event_id)
        return split


def _service(bootstrap: str, topics: TopicNames, recorder: Recorder) -> Service:
    settings = ServiceSettings(
        kafka_bootstrap_servers=bootstrap,
        topic_prefix=topics.prefix,
        retry_backoff_s=0,
        metadata_max_age_s=0.5,
    )
    service = create_service(settings, description="A follower of announcements.")
    follower = service.follow(topics.actuators, _later(topics), deduplicate=False)
    follower(recorder.on_actuator_registered)
    service.topics_used.discard(_later(topics))  # not provisioned: it does not exist at the fold
    return service


@asynccontextmanager
async def _running(service: Service) -> AsyncIterator[Service]:
    async with service.app.start_lifespan_context():
        yield service


async def test_events_published_before_the_start_are_folded_once_and_those_after_go_live_once(
    kafka_bootstrap, followed, producer
):
    topics, recorder = followed, Recorder()
    before_0, before_1 = _announcements(40, "b0"), _announcements(25, "b1")
    await producer.send(topics.actuators, 0, *before_0[:20])
    await producer.send_raw(topics.actuators, 0, b"not an event")
    await producer.send(topics.actuators, 0, *before_0[20:])
    await producer.send(topics.actuators, 1, *before_1)
    service = _service(kafka_bootstrap, topics, recorder)

    async with _running(service):
        folded_at_start = list(recorder.handled)
        report = service.fold_report
        after = _announcements(30, "a")
        await producer.send(topics.actuators, 0, *after[:10])
        await producer.send_raw(topics.actuators, 1, b"not an event either")
        await producer.send(topics.actuators, 1, *after[10:15])
        await producer.send(topics.actuators, 2, *after[15:20])
        await producer.send(_later(topics), 0, *after[20:])
        await eventually(lambda: len(recorder.handled) >= 95, 30.0)
        await asyncio.sleep(1.0)
        letters = await EventClient(kafka_bootstrap).read_events(topics.dead_letter, 1)

    assert sorted(folded_at_start) == sorted(e.event_id for e in before_0 + before_1)
    assert report is not None
    assert (report.folded, report.unreadable, report.ignored) == (65, 1, 0)
    assert report.ends == {(topics.actuators, 0): 41, (topics.actuators, 1): 25} | {
        (topics.actuators, 2): 0
    }
    assert len(recorder.handled) == len(set(recorder.handled)) == 95
    assert recorder.by_partition(producer.sent) == producer.sent
    [letter] = letters
    assert isinstance(letter, DeadLettered)
    assert (letter.source_partition, letter.original()) == (1, b"not an event either")


async def test_a_fold_of_its_own_takes_the_events_read_at_start_and_the_handlers_the_rest(
    kafka_bootstrap, followed, producer
):
    topics, recorder = followed, Recorder()
    before, after = _announcements(5, "b"), _announcements(5, "a")
    await producer.send(topics.actuators, 1, *before)
    settings = ServiceSettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix)
    service = create_service(settings, description="A follower folding on its own at start.")
    follower = service.consumer(topics.actuators, replay=True)
    follower(recorder.on_actuator_registered)
    folded: list[str] = []

    @service.on_startup
    async def fold_at_start() -> None:
        await fold_then_follow(kafka_bootstrap, follower, fold=lambda e: folded.append(e.event_id))

    async with _running(service):
        await producer.send(topics.actuators, 1, *after)
        await eventually(lambda: len(recorder.handled) >= 5, 30.0)
        await asyncio.sleep(0.5)

    assert folded == [e.event_id for e in before]
    assert recorder.handled == [e.event_id for e in after]


async def test_the_garbage_collector_is_paused_while_the_fold_reads_and_runs_again_after(
    kafka_bootstrap, followed, producer
):
    topics = followed
    await producer.send(topics.actuators, 0, *_announcements(3, "b"))
    settings = ServiceSettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix)
    service = create_service(settings, description="A follower folding on its own at start.")
    follower = service.consumer(topics.actuators, replay=True)
    follower(Recorder().on_actuator_registered)
    collecting: list[bool] = []

    @service.on_startup
    async def fold_at_start() -> None:
        await fold_then_follow(
            kafka_bootstrap, follower, fold=lambda e: collecting.append(gc.isenabled())
        )
        collecting.append(gc.isenabled())

    assert gc.isenabled()
    async with _running(service):
        pass

    assert collecting == [False, False, False, True]


async def test_a_restarted_follower_folds_everything_again_and_nothing_twice(
    kafka_bootstrap, followed, producer
):
    topics = followed
    first, second = _announcements(10, "first"), _announcements(10, "second")
    await producer.send(topics.actuators, 0, *first)
    async with _running(_service(kafka_bootstrap, topics, Recorder())):
        await producer.send(topics.actuators, 0, *second)

    recorder = Recorder()
    async with _running(_service(kafka_bootstrap, topics, recorder)):
        folded_at_start = list(recorder.handled)
        await asyncio.sleep(1.0)

    assert folded_at_start == [e.event_id for e in first + second]
    assert recorder.handled == folded_at_start
