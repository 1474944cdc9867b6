"""Bad input never kills a service: dead letters, ignored events, retries (in memory)."""

from __future__ import annotations

import base64
import json

import pytest
from faststream.kafka import TestKafkaBroker

from discospace.events import DeadLettered, SpaceRejected, encode, new_event


async def test_a_message_that_is_not_json_is_dead_lettered_with_its_bytes_and_reason(
    probe, topics, metric
):
    async with TestKafkaBroker(probe.service.broker) as broker:
        await broker.publish(b"\x00 not json", topics.actuators, key=b"k1")

    [letter] = probe.dead_letters
    assert isinstance(letter, DeadLettered)
    assert letter.reason.startswith("not JSON")
    assert letter.original() == b"\x00 not json"
    assert base64.b64decode(letter.original_key_base64 or "") == b"k1"
    assert (letter.source_topic, letter.consumer) == (topics.actuators, "service")
    assert probe.handled == []
    assert metric(probe.service, "discospace_dead_lettered_total", reason_kind="malformed") == 1


async def test_a_schema_invalid_event_is_dead_lettered_naming_the_field(
    probe, topics, metric, make_announcement
):
    payload = json.loads(encode(make_announcement()))
    del payload["worker_id"]

    async with TestKafkaBroker(probe.service.broker) as broker:
        await broker.publish(json.dumps(payload).encode(), topics.actuators)

    [letter] = probe.dead_letters
    assert letter.reason == "not a valid ActuatorRegistered v1: worker_id: Field required"
    assert metric(probe.service, "discospace_dead_lettered_total", reason_kind="invalid") == 1


async def test_the_consumer_keeps_handling_after_bad_messages(probe, topics, make_announcement):
    good = make_announcement()

    async with TestKafkaBroker(probe.service.broker) as broker:
        await broker.publish(b"{", topics.actuators)
        await broker.publish(b'{"type": "NoSuchEvent"}', topics.actuators)
        await broker.publish(encode(good), topics.actuators)

    assert probe.handled == [good]
    assert [letter.reason for letter in probe.dead_letters][1] == "unknown event type 'NoSuchEvent'"


async def test_a_valid_event_no_handler_takes_is_skipped_not_dead_lettered(probe, topics, metric):
    other = new_event(SpaceRejected, submission_id="s-1", reason="no catalog")

    async with TestKafkaBroker(probe.service.broker) as broker:
        await broker.publish(encode(other), topics.actuators)

    assert probe.handled == []
    assert probe.dead_letters == []
    assert metric(probe.service, "discospace_ignored_events_total", event_type="SpaceRejected") == 1


async def test_a_failing_handler_is_not_committed_and_handles_the_event_when_it_comes_again(
    probe, topics, metric, make_announcement
):
    event = make_announcement()
    probe.failures_left = 1

    async with TestKafkaBroker(probe.service.broker) as broker:
        with pytest.raises(ConnectionError):
            await broker.publish(encode(event), topics.actuators)
        await broker.publish(encode(event), topics.actuators)

    assert probe.handled == [event]
    assert probe.dead_letters == []
    assert (
        metric(probe.service, "discospace_handler_failures_total", exception="ConnectionError") == 1
    )


async def test_a_redelivered_event_is_handled_once(probe, topics, metric, make_announcement):
    event = make_announcement()

    async with TestKafkaBroker(probe.service.broker) as broker:
        await broker.publish(encode(event), topics.actuators)
        await broker.publish(encode(event), topics.actuators)

    assert probe.handled == [event]
    assert metric(probe.service, "discospace_duplicate_events_dropped_total") == 1
