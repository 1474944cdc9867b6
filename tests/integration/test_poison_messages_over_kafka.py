"""No message can wedge a partition: every kind of unreadable message is dead-lettered with its
reason, the message after it on the same partition is handled, and a service whose start-up fold
meets such messages starts (issue 13, "what a hostile user met", item 2)."""

from __future__ import annotations

import json

import pytest

from discospace.events import DeadLettered, SpaceRegistered, decode, encode
from discospace.registry.app import create_app
from discospace.registry.settings import RegistrySettings
from discospace.runtime.replay import replay_until

pytestmark = pytest.mark.integration


def _without_spec(event) -> bytes:
    payload = json.loads(encode(event))
    del payload["spec"]
    return json.dumps(payload).encode()


def poison(valid) -> dict[str, bytes]:
    """One message of each kind that once escaped the codec or never could be read."""
    return {
        "deep nesting": b'{"a":' * 5000 + b"1" + b"}" * 5000,
        "huge integer": b'{"type": "SpaceSubmitted", "n": 1' + b"1" * 5000 + b"}",
        "invalid UTF-8": b'{"type": "\xc3\x28"}',
        "not an object": b"[1, 2, 3]",
        "fails validation": _without_spec(valid),
    }


def _registry(kafka_bootstrap, topics):
    return create_app(
        RegistrySettings(
            kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix, retry_backoff_s=0.2
        )
    )


async def test_every_kind_of_poison_is_dead_lettered_and_the_next_message_is_handled(
    kafka, kafka_bootstrap, topics, run_service, wait_until, make_submission, make_catalog
):
    bad = poison(make_submission())
    async with run_service(_registry(kafka_bootstrap, topics)) as registry:
        await kafka.publish(make_catalog(), topics=topics)
        await wait_until(lambda: len(registry.state) > 0)
        await kafka.produce(topics.space_submissions, *bad.values(), key=b"one-partition")
        good = make_submission()
        await kafka.produce(topics.space_submissions, encode(good), key=b"one-partition")
        [answer] = await kafka.read_events(topics.spaces, 1, timeout_s=30)
        letters = await kafka.read_events(topics.dead_letter, len(bad), timeout_s=30)

    assert isinstance(answer, SpaceRegistered)
    assert answer.causation_id == good.event_id
    by_offset = sorted(letters, key=lambda letter: letter.source_offset)
    assert all(isinstance(letter, DeadLettered) for letter in by_offset)
    assert [letter.original() for letter in by_offset] == list(bad.values())
    reasons = dict(zip(bad, (letter.reason for letter in by_offset), strict=True))
    assert reasons["deep nesting"].startswith("not JSON: ")
    assert reasons["huge integer"].startswith("not JSON: ")
    assert reasons["invalid UTF-8"].startswith("not JSON: ")
    assert reasons["not an object"].startswith("not an event")
    assert reasons["fails validation"] == "not a valid SpaceSubmitted v1: spec: Field required"


async def test_a_service_whose_start_up_fold_meets_poison_starts_and_answers(
    kafka, kafka_bootstrap, topics, run_service, make_submission, make_catalog
):
    async with run_service(_registry(kafka_bootstrap, topics)):
        pass  # creates the topics
    bad = list(poison(make_submission()).values())
    await kafka.produce(topics.actuators, *bad)
    await kafka.publish(make_catalog(), topics=topics)
    await kafka.produce(topics.spaces, *bad)

    registry = _registry(kafka_bootstrap, topics)
    async with run_service(registry):
        await kafka.publish(make_submission(), topics=topics)
        records = await kafka.read(topics.spaces, len(bad) + 1, timeout_s=30)

    [answer] = [decode(record.value) for record in records if record.value not in bad]
    assert isinstance(answer, SpaceRegistered)
    assert registry.fold_report.unreadable == 2 * len(bad)
    assert registry.fold_report.folded == 1


async def test_replaying_partitions_up_to_an_offset_skips_poison(
    kafka, kafka_bootstrap, topics, run_service, make_submission, make_catalog
):
    async with run_service(_registry(kafka_bootstrap, topics)):
        pass  # creates the topics
    bad = list(poison(make_submission()).values())
    await kafka.produce(topics.actuators, *bad, encode(make_catalog()), key=b"one-partition")
    records = await kafka.read(topics.actuators, len(bad) + 1)
    partition = records[0].partition
    folded = []

    report = await replay_until(
        kafka_bootstrap, {(topics.actuators, partition): len(bad) + 1}, folded.append
    )

    assert (report.events, report.skipped) == (1, len(bad))
    assert folded == [decode(records[-1].value)]
