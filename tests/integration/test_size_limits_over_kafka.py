"""Size limits are explicit and every message the services produce fits them (issue 13, "what a
hostile user met", item 3): a message too large to dead-letter whole is dead-lettered cut short,
with its size and sha256, and a space whose registration would not fit is rejected with a
sentence, not retried forever."""

from __future__ import annotations

import hashlib

import pytest

from discospace.core import ExperimentRef, PropertySpec, SpaceSpec
from discospace.events import (
    MAX_MESSAGE_BYTES,
    DeadLettered,
    EventTooLargeError,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    decode,
    encode,
    new_event,
)
from discospace.events.envelope import message_size
from discospace.registry.app import create_app
from discospace.registry.domain import RegistryState, decide_submission, evolve
from discospace.registry.settings import RegistrySettings

pytestmark = pytest.mark.integration


def _registry(kafka_bootstrap, topics):
    return create_app(
        RegistrySettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix)
    )


def _invalid_of(size: int) -> bytes:
    """A JSON object of `size` bytes that is no event."""
    head = b'{"type": "SpaceSubmitted", "padding": "'
    return head + b"x" * (size - len(head) - 2) + b'"}'


async def test_an_invalid_message_near_the_size_limit_is_dead_lettered_cut_short(
    kafka, kafka_bootstrap, topics, run_service, wait_until, make_submission, make_catalog
):
    big = _invalid_of(1_000_000)
    async with run_service(_registry(kafka_bootstrap, topics)) as registry:
        await kafka.publish(make_catalog(), topics=topics)
        await wait_until(lambda: len(registry.state) > 0)
        await kafka.produce(topics.space_submissions, big, key=b"one-partition")
        good = make_submission()
        await kafka.produce(topics.space_submissions, encode(good), key=b"one-partition")
        [answer] = await kafka.read_events(topics.spaces, 1, timeout_s=30)
        [record] = await kafka.read(topics.dead_letter, 1, timeout_s=30)

    assert isinstance(answer, SpaceRegistered)
    letter = decode(record.value)
    assert isinstance(letter, DeadLettered)
    assert len(record.value) <= MAX_MESSAGE_BYTES
    assert letter.original_truncated
    assert letter.original_size == len(big)
    assert letter.original_sha256 == hashlib.sha256(big).hexdigest()
    assert big.startswith(letter.original())
    assert len(letter.original()) > 500_000
    assert letter.reason.startswith("not a valid SpaceSubmitted")


def _submission(values: int) -> SpaceSubmitted:
    spec = SpaceSpec(
        sample_store="store-a",
        entity_space=(
            PropertySpec(name="batch_size", values=tuple(range(1, values + 1))),
            PropertySpec(name="number_gpus", values=(1, 2)),
        ),
        measurement_space=(
            ExperimentRef(actuator="SFTTrainer", experiment="finetune-full-v1.2.0"),
        ),
    )
    return new_event(SpaceSubmitted, submission_id="big", spec=spec, submitted_by="tester")


def _registration_size(submission: SpaceSubmitted, catalog) -> int:
    state = RegistryState()
    evolve(state, catalog)
    answer = decide_submission(state, submission, submission.occurred_at, 10 * MAX_MESSAGE_BYTES)
    assert isinstance(answer, SpaceRegistered)
    return message_size(encode(answer), answer.key())


def _submission_that_fits_whose_registration_does_not(catalog) -> SpaceSubmitted:
    """The largest space whose submission fits the limit; its registration, a little larger,
    does not."""
    low, high = 1, 200_000
    while high - low > 1:
        middle = (low + high) // 2
        candidate = _submission(middle)
        fits = message_size(encode(candidate), candidate.key()) <= MAX_MESSAGE_BYTES
        low, high = (middle, high) if fits else (low, middle)
    submission = _submission(low)
    assert _registration_size(submission, catalog) > MAX_MESSAGE_BYTES
    return submission


async def test_a_space_whose_registration_would_be_too_large_is_rejected_with_a_sentence(
    kafka, kafka_bootstrap, topics, run_service, wait_until, make_submission, make_catalog
):
    catalog = make_catalog()
    big = _submission_that_fits_whose_registration_does_not(catalog)
    async with run_service(_registry(kafka_bootstrap, topics)) as registry:
        await kafka.publish(catalog, topics=topics)
        await wait_until(lambda: len(registry.state) > 0)
        await kafka.publish(big, topics=topics)
        later = make_submission(sid="later")
        await kafka.publish(later, topics=topics)
        answers = await kafka.read_events(topics.spaces, 2, timeout_s=30)

    by_submission = {answer.submission_id: answer for answer in answers}
    rejected = by_submission["big"]
    assert isinstance(rejected, SpaceRejected)
    assert rejected.reason.startswith("the space is too large to register: its registration")
    assert "byte message limit" in rejected.reason
    assert isinstance(by_submission["later"], SpaceRegistered)


async def test_a_publisher_refuses_an_event_over_the_limit_with_a_sentence(
    kafka, kafka_bootstrap, topics, run_service
):
    settings = RegistrySettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        max_message_bytes=100_000,
    )
    service = create_app(settings)
    to_submissions = service.publisher(topics.space_submissions, SpaceSubmitted)
    async with run_service(service):
        with pytest.raises(EventTooLargeError) as refused:
            await to_submissions(_submission(20_000))

    assert str(refused.value).startswith("SpaceSubmitted ")
    assert str(refused.value).endswith("over the 100000-byte message limit; it was not sent")
    assert await kafka.read_all(topics.space_submissions, settle_s=1) == []
