"""A consumer group's offsets on the real broker, committed in the background
(`discospace.runtime.committing`): they reach the end of what was handled while the service
runs, and at a graceful stop right after the last message, so a restarted service hands its
handler nothing twice; a message whose handler keeps failing is never committed past."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from discospace.events import (
    ActuatorRegistered,
    DeadLettered,
    SpaceSubmitted,
    TopicNames,
    encode,
    new_event,
    written_type,
)
from discospace.runtime import (
    Service,
    ServiceSettings,
    TransientError,
    create_service,
    hold_commit,
)
from discospace.runtime.committing import CLOSE_COMMIT_S
from discospace.testing.clients import EventClient
from discospace.testing.kafka import create_topics
from discospace.testing.waiting import eventually

pytestmark = pytest.mark.integration


class Handler:
    def __init__(self, failing: str | None = None) -> None:
        self.handled: list[str] = []
        self.failing = failing

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        if event.worker_id == self.failing:
            raise TransientError("the store did not answer")
        self.handled.append(event.worker_id)


def _service(bootstrap: str, topics: TopicNames, handler: Handler) -> Service:
    service = create_service(
        ServiceSettings(
            kafka_bootstrap_servers=bootstrap,
            topic_prefix=topics.prefix,
            retry_backoff_s=0.05,
            retry_backoff_max_s=0.2,
        ),
        description="A probe of offset commits.",
    )
    service.consumer(topics.actuators)(handler.on_actuator_registered)
    return service


def _announcements(count: int, start: int = 0) -> list[ActuatorRegistered]:
    return [
        new_event(
            ActuatorRegistered, actuator="probe", pool="p1", experiments=(), worker_id=f"w{i}"
        )
        for i in range(start, start + count)
    ]


async def _committed(bootstrap: str, group: str, topic: str) -> int | None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    found = offsets.get(TopicPartition(topic, 0))
    return found.offset if found is not None and found.offset >= 0 else None


async def _until_committed(
    bootstrap: str, group: str, topic: str, offset: int, timeout_s: float = 60.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while (committed := await _committed(bootstrap, group, topic)) != offset:
        assert time.monotonic() < deadline, (
            f"committed {committed}, not {offset}, after {timeout_s}s"
        )
        await asyncio.sleep(0.05)


@pytest.fixture
async def one_partition(kafka_bootstrap: str, topics: TopicNames) -> TopicNames:
    await create_topics(kafka_bootstrap, {topics.actuators: 1})
    return topics


async def test_offsets_reach_the_end_while_running_and_at_a_stop(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    handler = Handler()
    service = _service(kafka_bootstrap, topics, handler)
    group = service.settings.consumer_group

    async def committed() -> int | None:
        return await _committed(kafka_bootstrap, group, topics.actuators)

    async with service.app.start_lifespan_context():
        await kafka.publish(*_announcements(40), topics=topics)
        await eventually(lambda: len(handler.handled) == 40)
        await _until_committed(kafka_bootstrap, group, topics.actuators, 40)  # while it runs
        await kafka.publish(*_announcements(5, start=40), topics=topics)
        await eventually(lambda: len(handler.handled) == 45)
    # stopped right after the last message: its offset went with the stop
    assert await committed() == 45

    again = Handler()
    async with _service(kafka_bootstrap, topics, again).app.start_lifespan_context():
        await kafka.publish(*_announcements(1, start=45), topics=topics)
        await eventually(lambda: again.handled == ["w45"])
    assert handler.handled == [f"w{i}" for i in range(45)]


async def test_a_message_that_keeps_failing_is_not_committed_past(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    handler = Handler(failing="w3")
    service = _service(kafka_bootstrap, topics, handler)
    group = service.settings.consumer_group

    async with service.app.start_lifespan_context():
        await kafka.publish(*_announcements(6), topics=topics)
        await eventually(lambda: handler.handled == ["w0", "w1", "w2"])
        await _until_committed(kafka_bootstrap, group, topics.actuators, 3)
        await asyncio.sleep(1.0)  # it keeps failing meanwhile; nothing behind it is read
        held = await _committed(kafka_bootstrap, group, topics.actuators)
        handler.failing = None
        await eventually(lambda: len(handler.handled) == 6)
    assert held == 3
    assert handler.handled == [f"w{i}" for i in range(6)]
    assert await _committed(kafka_bootstrap, group, topics.actuators) == 6


Commit = Callable[[object], Awaitable[None]]


async def _stop_while_committing(
    kafka: EventClient, bootstrap: str, topics: TopicNames, commit: Callable[[Commit], Commit]
) -> tuple[str, float]:
    """Handle three messages (committed), then two more whose commit goes through
    `commit(the consumer's commit)`, then stop at once: the group, and seconds the stop took."""
    handler = Handler()
    service = _service(bootstrap, topics, handler)
    group = service.settings.consumer_group
    async with service.app.start_lifespan_context():
        await kafka.publish(*_announcements(3), topics=topics)
        await eventually(lambda: len(handler.handled) == 3)
        await _until_committed(bootstrap, group, topics.actuators, 3)
        [subscriber] = list(service.broker.subscribers)
        consumer = subscriber.consumer  # type: ignore[attr-defined]
        consumer.commit = commit(consumer.commit)
        await kafka.publish(*_announcements(2, start=3), topics=topics)
        await eventually(lambda: len(handler.handled) == 5)
        stopping = time.monotonic()
    return group, time.monotonic() - stopping


async def test_a_commit_in_flight_when_the_service_stops_lands_before_its_consumer_closes(
    kafka, kafka_bootstrap, one_partition
):
    def slow(commit: Commit) -> Commit:
        async def slow_commit(offsets: object = None) -> None:
            await asyncio.sleep(0.5)  # still in flight when the stop begins
            await commit(offsets)

        return slow_commit

    group, _ = await _stop_while_committing(kafka, kafka_bootstrap, one_partition, slow)

    # The stop waited for the commit in flight, then committed the rest, then closed.
    assert await _committed(kafka_bootstrap, group, one_partition.actuators) == 5


async def test_a_last_commit_the_broker_never_answers_delays_the_stop_by_a_bounded_time(
    kafka, kafka_bootstrap, one_partition, caplog
):
    def unanswered(commit: Commit) -> Commit:
        async def no_answer(offsets: object = None) -> None:
            await asyncio.sleep(3600)

        return no_answer

    topics = one_partition
    group, stopped_after = await _stop_while_committing(kafka, kafka_bootstrap, topics, unanswered)

    assert stopped_after < CLOSE_COMMIT_S + 5
    assert await _committed(kafka_bootstrap, group, topics.actuators) == 3
    assert "offsets not committed before the consumer closed (no answer in 5 s)" in caplog.text
    again = Handler()
    async with _service(kafka_bootstrap, topics, again).app.start_lifespan_context():
        await eventually(lambda: again.handled == ["w3", "w4"])  # delivered again, nothing lost


async def test_events_no_handler_takes_are_committed_past_without_the_pipeline(
    kafka, kafka_bootstrap, one_partition, make_submission
):
    """A valid event of a type none of the consumer's handlers takes is counted as ignored and
    committed past without going through FastStream's per-message pipeline; one of such a type
    that fails its schema still goes that way, to the dead-letter topic."""
    topics = one_partition
    handler = Handler()
    service = create_service(
        ServiceSettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix),
        description="A probe of events no handler takes.",
    )
    consumer = service.consumer(topics.actuators)
    consumer(handler.on_actuator_registered)
    through_pipeline: list[int] = []
    pipeline = consumer._consume_one

    async def counted(record: ConsumerRecord) -> None:
        through_pipeline.append(record.offset)
        await pipeline(record)

    consumer._consume_one = counted
    passed_over: list[tuple[str, int, int]] = []
    service.passed_over.append(lambda *position: passed_over.append(position))
    group = service.settings.consumer_group
    broken = encode(make_submission()).replace(b'"spec":', b'"spek":')
    assert written_type(broken) is SpaceSubmitted  # reads as a current event at a glance

    async with service.app.start_lifespan_context():
        await kafka.produce(
            topics.actuators,
            encode(make_submission()),
            broken,
            encode(_announcements(1)[0]),
            encode(make_submission()),
        )
        await eventually(lambda: handler.handled == ["w0"])
        await _until_committed(kafka_bootstrap, group, topics.actuators, 4)
        [letter] = await kafka.read_events(topics.dead_letter, 1)
        ignored = service.metrics.registry.get_sample_value(
            "discospace_ignored_events_total", {"event_type": "SpaceSubmitted"}
        )

    assert isinstance(letter, DeadLettered)
    assert (letter.source_offset, letter.original()) == (1, broken)
    assert letter.reason.startswith("not a valid SpaceSubmitted v1: spec")
    assert ignored == 2
    assert through_pipeline == [1, 2]  # the broken submission and the announcement
    assert passed_over == [(topics.actuators, 0, 0), (topics.actuators, 0, 3)]


class Holding(Handler):
    """Holds the commit of one message (`hold_commit`), as the sampler's waiting request does."""

    def __init__(self, holding: str) -> None:
        super().__init__()
        self.holding = holding
        self.releases: list[Callable[[], None]] = []

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        self.handled.append(event.worker_id)
        if event.worker_id == self.holding:
            self.releases.append(hold_commit())


async def test_a_held_message_is_not_committed_past_until_released_and_the_rest_flows_on(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    handler = Holding("w2")
    service = _service(kafka_bootstrap, topics, handler)
    group = service.settings.consumer_group
    async with service.app.start_lifespan_context():
        await kafka.publish(*_announcements(6), topics=topics)
        await eventually(lambda: len(handler.handled) == 6)  # past the held one meanwhile
        await _until_committed(kafka_bootstrap, group, topics.actuators, 2)
        await asyncio.sleep(0.3)
        assert await _committed(kafka_bootstrap, group, topics.actuators) == 2
        [release] = handler.releases
        release()
        await _until_committed(kafka_bootstrap, group, topics.actuators, 6)


async def test_a_message_held_when_the_service_stops_is_handed_to_the_next_one_again(
    kafka, kafka_bootstrap, one_partition
):
    topics = one_partition
    handler = Holding("w2")
    service = _service(kafka_bootstrap, topics, handler)
    group = service.settings.consumer_group
    async with service.app.start_lifespan_context():
        await kafka.publish(*_announcements(5), topics=topics)
        await eventually(lambda: len(handler.handled) == 5)
    assert await _committed(kafka_bootstrap, group, topics.actuators) == 2

    again = Handler()
    async with _service(kafka_bootstrap, topics, again).app.start_lifespan_context():
        await eventually(lambda: again.handled == ["w2", "w3", "w4"])
