"""Provisioning: topics are created with the layout's settings and an explicit size limit."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import MessageSizeTooLargeError

from discospace.events import MAX_MESSAGE_BYTES, TopicNames
from discospace.runtime import ServiceSettings, create_service
from discospace.runtime.provisioning import new_topics, provision_topics


def test_every_topic_gets_the_size_limit_and_the_layouts_compaction() -> None:
    topics = TopicNames("p")

    created = {
        topic.name: topic.topic_configs
        for topic in new_topics(topics.fixed(), topics, 3, 1, max_message_bytes=200_000)
    }

    assert created[topics.spaces] == {"max.message.bytes": "200000", "cleanup.policy": "compact"}
    assert created[topics.operations] == {"max.message.bytes": "200000"}
    assert all(config["max.message.bytes"] == "200000" for config in created.values())


def test_without_a_limit_given_topics_take_the_default_message_size() -> None:
    topics = TopicNames("p")
    (topic,) = new_topics([topics.operations], topics, 3, 1)
    assert topic.topic_configs == {"max.message.bytes": str(MAX_MESSAGE_BYTES)}


async def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (response,) = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)]
        )
    finally:
        await admin.close()
    (resource,) = response.resources
    return {name: value for name, value, *_ in resource[4]}


@pytest.mark.integration
async def test_a_service_creates_its_topics_with_its_message_size_limit_on_the_broker(
    kafka_bootstrap: str,
) -> None:
    topics = TopicNames.unique("provision")
    settings = ServiceSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        max_message_bytes=128 * 1024,
    )
    service = create_service(settings, description="toy")
    service.topics_used.update([topics.operations, topics.spaces])

    await service.provision_topics()

    operations = await _topic_config(kafka_bootstrap, topics.operations)
    spaces = await _topic_config(kafka_bootstrap, topics.spaces)
    assert operations["max.message.bytes"] == spaces["max.message.bytes"] == str(128 * 1024)
    assert (operations["cleanup.policy"], spaces["cleanup.policy"]) == ("delete", "compact")


@pytest.mark.integration
async def test_the_broker_refuses_a_message_over_the_topics_limit(kafka_bootstrap: str) -> None:
    topics = TopicNames.unique("provision")
    await provision_topics(
        kafka_bootstrap, [topics.operations], topics, max_message_bytes=64 * 1024
    )
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, max_request_size=1_000_000)
    await producer.start()
    try:
        await producer.send_and_wait(topics.operations, b"x" * 60_000)
        with pytest.raises(MessageSizeTooLargeError):
            await producer.send_and_wait(topics.operations, b"x" * 70_000)
    finally:
        await producer.stop()
