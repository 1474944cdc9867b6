"""Bad input never kills a service, and offsets are committed only after handling, on the broker."""

from __future__ import annotations

import json
import logging

import pytest

from discospace.events import ActuatorRegistered, DeadLettered, SpaceRejected, decode, encode
from discospace.registry.app import create_app
from discospace.registry.settings import RegistrySettings
from discospace.runtime import ServiceSettings, create_service

pytestmark = pytest.mark.integration


def _registry(kafka_bootstrap, topics, **settings):
    return create_app(
        RegistrySettings(
            kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix, **settings
        )
    )


def _without(event, field: str) -> bytes:
    payload = json.loads(encode(event))
    del payload[field]
    return json.dumps(payload).encode()


async def test_malformed_and_invalid_messages_are_dead_lettered_and_the_next_one_is_handled(
    kafka, kafka_bootstrap, topics, run_service, make_submission
):
    valid = make_submission("unknown-experiment")
    async with run_service(_registry(kafka_bootstrap, topics)) as registry:
        await kafka.produce(
            topics.space_submissions,
            b"this is not JSON",
            _without(make_submission(), "spec"),
            encode(valid),
        )
        letters = await kafka.read_events(topics.dead_letter, 2)
        [answer] = await kafka.read_events(topics.spaces, 1)
        dead_lettered = registry.metrics.registry.get_sample_value

    assert all(isinstance(letter, DeadLettered) for letter in letters)
    malformed, invalid = sorted(letters, key=lambda letter: letter.source_offset)
    assert malformed.reason.startswith("not JSON")
    assert malformed.original() == b"this is not JSON"
    assert invalid.reason == "not a valid SpaceSubmitted v1: spec: Field required"
    assert {letter.source_topic for letter in letters} == {topics.space_submissions}
    assert [malformed.source_offset, invalid.source_offset] == [0, 1]
    assert {letter.consumer for letter in letters} == {"registry"}
    assert isinstance(answer, SpaceRejected)
    assert answer.causation_id == valid.event_id
    for kind in ("malformed", "invalid"):
        assert dead_lettered("discospace_dead_lettered_total", {"reason_kind": kind}) == 1


async def test_a_message_whose_handler_failed_is_delivered_again_by_the_broker(
    kafka, kafka_bootstrap, topics, run_service, wait_until, make_catalog, caplog
):
    settings = ServiceSettings(
        kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix, retry_backoff_s=0.1
    )
    service = create_service(settings, description="A worker whose store is flaky.")
    attempts: list[str] = []

    @service.consumer(topics.actuators)
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        attempts.append(event.event_id)
        if len(attempts) < 3:
            raise ConnectionError("the store did not answer")

    announced = make_catalog()
    with caplog.at_level(logging.DEBUG):
        async with run_service(service):
            await kafka.publish(announced, topics=topics)
            await wait_until(lambda: len(attempts) == 3)

    assert attempts == [announced.event_id] * 3
    told = [r for r in caplog.records if "the store did not answer" in r.getMessage()]
    # each failure said once, as the warning that says when it comes again (FastStream's own
    # logging middleware logged it a second time, at ERROR with a traceback)
    assert [(r.name, r.levelno) for r in told] == [
        ("discospace.runtime.deadletter", logging.WARNING)
    ] * 2
    failures = service.metrics.registry.get_sample_value(
        "discospace_handler_failures_total", {"exception": "ConnectionError"}
    )
    assert failures == 2
    assert await kafka.read_all(topics.dead_letter, settle_s=1) == []


async def test_a_handled_message_is_committed_so_a_restarted_service_does_not_handle_it_again(
    kafka, kafka_bootstrap, topics, run_service, make_submission
):
    async with run_service(_registry(kafka_bootstrap, topics)):
        await kafka.publish(make_submission("unknown-experiment", sid="first"), topics=topics)
        await kafka.read_events(topics.spaces, 1)

    async with run_service(_registry(kafka_bootstrap, topics)):
        await kafka.publish(make_submission("unknown-experiment", sid="second"), topics=topics)
        await kafka.read(topics.spaces, 2)

    answers = [decode(record.value) for record in await kafka.read_all(topics.spaces)]
    # one answer each (the topic's partitions are read in no particular order)
    assert sorted(answer.submission_id for answer in answers) == ["first", "second"]
