"""The registry's handlers, in memory (FastStream's TestKafkaBroker): same wiring, no broker."""

from __future__ import annotations

from typing import Any

from faststream.kafka import TestKafkaBroker
from faststream.message import StreamMessage

from discospace.events import Event, SpaceRegistered, SpaceRejected, decode, encode
from discospace.registry.app import create_app
from discospace.registry.settings import RegistrySettings


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


async def test_a_space_using_an_unknown_experiment_is_rejected_with_the_reason(
    topics, clock, make_submission
):
    service, answers = _registry_with_answers(topics, clock)

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(
            encode(make_submission("no-such-experiment")), topics.space_submissions
        )

    [answer] = answers
    assert isinstance(answer, SpaceRejected)
    assert "'no-such-experiment' of actuator 'SFTTrainer' is not in the catalog" in answer.reason


async def test_a_redelivered_submission_is_answered_once(topics, clock, make_submission):
    service, answers = _registry_with_answers(topics, clock)
    submitted = encode(make_submission("no-such-experiment"))

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(submitted, topics.space_submissions)
        await broker.publish(submitted, topics.space_submissions)

    assert len(answers) == 1
