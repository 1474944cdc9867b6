"""Publish through the registry's handler on the real broker and consume its answer."""

from __future__ import annotations

import pytest

from discospace.events import SpaceRegistered, SpaceRejected
from discospace.registry.app import create_app
from discospace.registry.settings import RegistrySettings

pytestmark = pytest.mark.integration


def _registry(kafka_bootstrap, topics):
    return create_app(
        RegistrySettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix)
    )


async def test_a_submitted_space_is_registered_once_the_catalog_has_its_experiment(
    kafka, kafka_bootstrap, topics, run_service, wait_until, make_catalog, make_submission
):
    submitted = make_submission()
    async with run_service(_registry(kafka_bootstrap, topics)) as registry:
        await kafka.publish(make_catalog(), topics=topics)
        await wait_until(lambda: len(registry.state) == 1)
        await kafka.publish(submitted, topics=topics)
        [answer] = await kafka.read_events(topics.spaces, 1)

    assert isinstance(answer, SpaceRegistered)
    assert (answer.causation_id, answer.correlation_id) == (submitted.event_id, "sub-1")
    assert [e.experiment for e in answer.experiments] == ["finetune-full-v1.2.0"]


async def test_a_space_with_an_unknown_experiment_is_rejected_on_the_spaces_topic(
    kafka, kafka_bootstrap, topics, run_service, make_submission
):
    async with run_service(_registry(kafka_bootstrap, topics)):
        await kafka.publish(make_submission("finetune-lora-v9"), topics=topics)
        [answer] = await kafka.read_events(topics.spaces, 1)

    assert isinstance(answer, SpaceRejected)
    assert "experiment 'finetune-lora-v9' of actuator 'SFTTrainer' is not in the catalog" in (
        answer.reason
    )
