"""The registry's handlers, in memory (FastStream's TestKafkaBroker): same wiring, no broker."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.kafka import TestKafkaBroker
from faststream.message import StreamMessage

from discospace.events import Event, SpaceRegistered, decode, encode
from discospace.registry.app import create_app
from discospace.registry.settings import RegistrySettings
from discospace.runtime import TransientError


async def _event_of(message: StreamMessage[Any]) -> Event:
    return decode(message.body)


def _registry_with_answers(topics, clock):
    service = create_app(RegistrySettings(topic_prefix=topics.prefix), clock=clock)
    answers: list[Event] = []

    @service.broker.subscriber(topics.spaces, decoder=_event_of)
    async def collect(event: Event) -> None:
        answers.append(event)

    return service, answers


async def test_a_space_whose_experiments_are_in_the_catalog_is_registered(
    topics, clock, make_catalog, make_submission
):
    service, answers = _registry_with_answers(topics, clock)
    submitted = make_submission()

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(make_catalog()), topics.actuators)
        await broker.publish(encode(submitted), topics.space_submissions)

    [answer] = answers
    assert isinstance(answer, SpaceRegistered)
    assert (answer.submission_id, answer.causation_id) == ("sub-1", submitted.event_id)
    assert [e.experiment for e in answer.experiments] == ["finetune-full-v1.2.0"]
    assert answer.space_id.startswith("space-")


async def test_a_space_using_an_unknown_experiment_waits_for_the_catalogs_to_be_read(
    topics, clock, make_submission
):
    """The in-memory broker cannot tell how much of the actuators topic is unread, so the
    submission is handed back as waiting for it, not rejected (on a real broker, read up to
    its end, it is rejected with the reason: tests/integration/test_registry_over_kafka.py)."""
    service, answers = _registry_with_answers(topics, clock)

    async with TestKafkaBroker(service.broker) as broker:
        with pytest.raises(TransientError, match="actuators topic are still to be read"):
            await broker.publish(
                encode(make_submission("no-such-experiment")), topics.space_submissions
            )

    assert answers == []


async def test_a_redelivered_submission_is_answered_once(
    topics, clock, make_catalog, make_submission
):
    service, answers = _registry_with_answers(topics, clock)
    submitted = encode(make_submission())

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(make_catalog()), topics.actuators)
        await broker.publish(submitted, topics.space_submissions)
        await broker.publish(submitted, topics.space_submissions)

    assert len(answers) == 1
