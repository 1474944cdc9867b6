"""The registry app in this process, on the real broker, with fresh topics per test."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.events import (
    Event,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    TopicNames,
    decode,
    encode,
)
from discospace.registry.app import create_app
from discospace.registry.settings import RegistrySettings
from discospace.runtime import Service

pytestmark = pytest.mark.integration


@asynccontextmanager
async def running(bootstrap: str, topics: TopicNames) -> AsyncIterator[Service]:
    """The registry started as `python -m discospace.registry` would start it, in-process."""
    service = create_app(
        RegistrySettings(kafka_bootstrap_servers=bootstrap, topic_prefix=topics.prefix)
    )
    async with service.app.start_lifespan_context():
        yield service


async def publish(bootstrap: str, topics: TopicNames, *events: Event) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for event in events:
            await producer.send_and_wait(event.topic(topics), encode(event), key=event.key())
    finally:
        await producer.stop()


async def read_events(
    bootstrap: str, topic: str, count: int, timeout_s: float = 20.0, settle_s: float = 0.0
) -> list[Event]:
    """``count`` events from the beginning of ``topic``; with ``settle_s``, keep reading that
    long after ``count`` arrived, so that an extra event would be seen."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"test-{uuid.uuid4().hex}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        events: list[Event] = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            events += [decode(r.value) for records in batches.values() for r in records]
            if len(events) >= count:
                deadline = min(deadline, time.monotonic() + settle_s)
        return events
    finally:
        await consumer.stop()


async def eventually(check: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not true after {timeout_s}s"
        await asyncio.sleep(0.05)


@pytest.fixture
def topics() -> TopicNames:
    return TopicNames.unique("registry")


async def test_a_space_is_registered_once_an_actuator_offers_its_experiment(
    kafka_bootstrap: str, topics: TopicNames, make_catalog, make_submission
) -> None:
    submitted: SpaceSubmitted = make_submission()
    async with running(kafka_bootstrap, topics) as registry:
        await publish(kafka_bootstrap, topics, make_catalog())
        await eventually(lambda: len(registry.state) == 1)
        await publish(kafka_bootstrap, topics, submitted)
        [answer] = await read_events(kafka_bootstrap, topics.spaces, 1)

    assert isinstance(answer, SpaceRegistered)
    assert (answer.submission_id, answer.causation_id) == ("sub-1", submitted.event_id)
    assert answer.space_id.startswith("space-")
    assert [e.experiment for e in answer.experiments] == ["finetune-full-v1.2.0"]


async def test_a_space_naming_an_experiment_no_actuator_offers_is_rejected_with_why(
    kafka_bootstrap: str, topics: TopicNames, make_catalog, make_submission
) -> None:
    async with running(kafka_bootstrap, topics) as registry:
        await publish(kafka_bootstrap, topics, make_catalog())
        await eventually(lambda: len(registry.state) == 1)
        await publish(kafka_bootstrap, topics, make_submission("finetune-lora-v9"))
        [answer] = await read_events(kafka_bootstrap, topics.spaces, 1)

    assert isinstance(answer, SpaceRejected)
    assert answer.reason == (
        "experiment 'finetune-lora-v9' of actuator 'SFTTrainer' is not in the catalog "
        "(actuator 'SFTTrainer' offers: finetune-full-v1.2.0)"
    )


async def test_the_same_space_submitted_twice_is_registered_once_under_the_same_id(
    kafka_bootstrap: str, topics: TopicNames, make_catalog, make_submission
) -> None:
    async with running(kafka_bootstrap, topics) as registry:
        await publish(kafka_bootstrap, topics, make_catalog())
        await eventually(lambda: len(registry.state) == 1)
        await publish(kafka_bootstrap, topics, make_submission(sid="sub-1"))
        await publish(kafka_bootstrap, topics, make_submission(sid="sub-2"))
        answers = await read_events(kafka_bootstrap, topics.spaces, 2, settle_s=1.0)

    assert len(answers) == 2
    first, second = answers
    assert isinstance(first, SpaceRegistered)
    assert second == first
    assert {answer.event_id for answer in answers} == {first.event_id}


async def test_a_restarted_registry_replays_catalogs_and_registrations_before_answering(
    kafka_bootstrap: str, topics: TopicNames, make_catalog, make_submission
) -> None:
    async with running(kafka_bootstrap, topics) as registry:
        await publish(kafka_bootstrap, topics, make_catalog())
        await eventually(lambda: len(registry.state) == 1)
        await publish(kafka_bootstrap, topics, make_submission(sid="sub-1"))
        [first] = await read_events(kafka_bootstrap, topics.spaces, 1)

    async with running(kafka_bootstrap, topics) as restarted:
        assert len(restarted.state) == 1
        assert restarted.state.is_registered(first.space_id)
        await publish(kafka_bootstrap, topics, make_submission(sid="sub-2"))
        answers = await read_events(kafka_bootstrap, topics.spaces, 2)

    assert answers == [first, first]


async def test_an_announcement_published_before_the_registry_started_is_known_at_once(
    kafka_bootstrap: str, topics: TopicNames, make_catalog, make_submission
) -> None:
    await publish(kafka_bootstrap, topics, make_catalog(), make_submission())
    async with running(kafka_bootstrap, topics):
        [answer] = await read_events(kafka_bootstrap, topics.spaces, 1)

    assert isinstance(answer, SpaceRegistered)


async def test_the_metrics_count_answers_by_outcome(
    kafka_bootstrap: str, topics: TopicNames, make_catalog, make_submission
) -> None:
    async with running(kafka_bootstrap, topics) as registry:
        await publish(kafka_bootstrap, topics, make_catalog())
        await eventually(lambda: len(registry.state) == 1)
        await publish(
            kafka_bootstrap,
            topics,
            make_submission(sid="sub-1"),
            make_submission(sid="sub-2"),
            make_submission("nope", sid="sub-3"),
        )
        await read_events(kafka_bootstrap, topics.spaces, 3)
        metrics = registry.metrics.registry

        def answered(outcome: str) -> float | None:
            return metrics.get_sample_value(
                "discospace_space_submissions_total", {"outcome": outcome}
            )

        await eventually(lambda: answered("rejected") == 1)
        assert (answered("registered"), answered("already_registered")) == (1, 1)
        assert metrics.get_sample_value("discospace_catalog_experiments") == 1
        assert metrics.get_sample_value("discospace_registered_spaces") == 1


async def test_a_starting_registry_folds_every_announcement_once_and_never_goes_back_to_an_older(
    kafka_bootstrap: str, topics: TopicNames, make_catalog, make_submission
) -> None:
    """An actuator announced its experiment, then announced it again with one required
    property fewer. A registry that folded the announcements at start and then read them again
    from the beginning would put the older entry back while catching up."""
    first = make_catalog()
    [spec] = first.experiments
    revised_spec = spec.model_copy(update={"required_properties": ("batch_size",)})
    revised = make_catalog().model_copy(update={"experiments": (revised_spec,)})
    await publish(kafka_bootstrap, topics, first, revised)
    service = create_app(
        RegistrySettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix)
    )
    folded: list[tuple[str, ...]] = []

    class Recording(dict):
        def __setitem__(self, key, experiments):
            folded.extend(tuple(spec.required_properties) for spec in experiments)
            super().__setitem__(key, experiments)

    service.state.announced = Recording()
    async with service.app.start_lifespan_context():
        await publish(kafka_bootstrap, topics, make_submission())
        [answer] = await read_events(kafka_bootstrap, topics.spaces, 1, settle_s=1.0)

    assert folded == [("batch_size", "number_gpus"), ("batch_size",)]
    assert isinstance(answer, SpaceRegistered)
    assert [e.required_properties for e in answer.experiments] == [("batch_size",)]
