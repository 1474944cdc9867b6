"""Provisioning: topics are created with the layout's settings and an explicit size limit."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import MessageSizeTooLargeError

from discospace.events import MAX_MESSAGE_BYTES, TopicNames
from discospace.runtime import ServiceSettings, create_service
from discospace.runtime.provisioning import (
    KEEP_EVERYTHING,
    deletes_events,
    new_topics,
    provision_topics,
)


def test_every_topic_gets_the_size_limit_and_the_layouts_compaction() -> None:
    topics = TopicNames("p")

    created = {
        topic.name: topic.topic_configs
        for topic in new_topics(topics.fixed(), topics, 3, 1, max_message_bytes=200_000)
    }

    keep = {"retention.ms": "-1", "retention.bytes": "-1"}
    assert created[topics.spaces] == {
        "max.message.bytes": "200000",
        "cleanup.policy": "compact",
        **keep,
    }
    assert created[topics.operations] == {"max.message.bytes": "200000", **keep}
    assert all(config["max.message.bytes"] == "200000" for config in created.values())
    assert all(not deletes_events(config) for config in created.values())


def test_without_a_limit_given_topics_take_the_default_message_size() -> None:
    topics = TopicNames("p")
    (topic,) = new_topics([topics.operations], topics, 3, 1)
    assert topic.topic_configs["max.message.bytes"] == str(MAX_MESSAGE_BYTES)


def test_a_topic_deletes_events_when_it_has_a_retention_and_the_delete_policy() -> None:
    week = str(7 * 24 * 3600 * 1000)
    assert deletes_events({"cleanup.policy": "delete", "retention.ms": week})
    assert deletes_events({"retention.bytes": "1073741824"})  # Kafka's policy: delete
    assert deletes_events({"cleanup.policy": "compact,delete", "retention.ms": week})
    assert not deletes_events({"cleanup.policy": "compact", "retention.ms": week})
    assert not deletes_events({"cleanup.policy": "delete", **KEEP_EVERYTHING})


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
    for config in (operations, spaces):  # the topics are the record services rebuild from
        assert (config["retention.ms"], config["retention.bytes"]) == ("-1", "-1")


@pytest.mark.integration
async def test_an_existing_topic_that_deletes_events_is_named_in_a_warning_at_start(
    kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Left as it is (someone chose its settings), but a service rebuilding from it would
    forget what it deleted: the warning says so, and how to keep them."""
    topics = TopicNames.unique("provision")
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        week = {"retention.ms": str(7 * 24 * 3600 * 1000)}
        await admin.create_topics([NewTopic(topics.measurements, 1, 1, topic_configs=week)])
    finally:
        await admin.close()

    with caplog.at_level(logging.WARNING, logger="discospace.runtime.provisioning"):
        await provision_topics(kafka_bootstrap, [topics.measurements, topics.operations], topics)

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    [warning] = [w for w in warnings if "deletes old events" in w]
    assert warning.startswith(f"topic {topics.measurements} deletes old events (retention.ms=6048")
    assert f"--entity-name {topics.measurements} --add-config retention.ms=-1" in warning
    assert topics.operations not in " ".join(warnings)
    measurements = await _topic_config(kafka_bootstrap, topics.measurements)
    assert measurements["retention.ms"] == week["retention.ms"]  # left as it was


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


class _Refusing:
    """An admin client of a cluster that answers every CreateTopics with Kafka error `code`."""

    code = 0

    def __init__(self, **_: object) -> None:
        pass

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def create_topics(self, wanted: list[Any]) -> Any:
        code = self.code

        class Response:
            def to_object(self) -> dict[str, Any]:
                errors = [
                    {"topic": t.name, "error_code": code, "error_message": None} for t in wanted
                ]
                return {"topic_errors": errors}

        return Response()

    async def describe_topics(self, names: list[str]) -> list[dict[str, Any]]:
        partitions = [{"leader": 1}]
        return [{"topic": name, "error_code": 0, "partitions": partitions} for name in names]

    async def describe_configs(self, resources: list[Any]) -> list[Any]:
        return []


async def test_a_topic_the_broker_refuses_as_asked_stops_the_start(monkeypatch, caplog) -> None:
    """A replication factor above the brokers' count (Kafka error 38) only warned: the service
    started, and the broker auto-created its topics with its own defaults (deleting old events,
    not compacted)."""
    from discospace.runtime import provisioning

    topics = TopicNames.unique("refused")
    monkeypatch.setattr(provisioning, "AIOKafkaAdminClient", _Refusing)
    monkeypatch.setattr(_Refusing, "code", 38)
    with pytest.raises(provisioning.TopicsRefusedError) as refused:
        await provisioning.provision_topics("localhost:1", [topics.spaces], topics, replication=3)
    assert str(refused.value).startswith(
        f"Kafka refused to create topic {topics.spaces} (InvalidReplicationFactorError): set "
    )
    monkeypatch.setattr(_Refusing, "code", 29)  # not allowed to: an administrator made them
    await provisioning.provision_topics("localhost:1", [topics.spaces], topics)
    assert f"could not create topic {topics.spaces} (Kafka error 29" in caplog.text


class _Unreadable(_Refusing):
    """A cluster where the topics exist and this principal may not read their configs: the
    broker answers DescribeConfigs with error 29 per topic (no exception)."""

    code = 36  # TopicAlreadyExists

    async def describe_configs(self, resources: list[Any]) -> list[Any]:
        response = SimpleNamespace(
            resources=[(29, "Topic authorization failed.", 2, r.name, []) for r in resources]
        )
        return [response]


async def test_an_existing_topic_whose_configs_cannot_be_read_is_said_at_start(
    monkeypatch, caplog
) -> None:
    """kafka.sh's principals had READ, WRITE and CREATE only: every topic was answered with
    error 29 and skipped, so no topic was ever named as deleting events, and nothing said the
    check had not run."""
    from discospace.runtime import provisioning

    topics = TopicNames.unique("unread")
    monkeypatch.setattr(provisioning, "AIOKafkaAdminClient", _Unreadable)
    with caplog.at_level(logging.WARNING, logger="discospace.runtime.provisioning"):
        await provisioning.provision_topics(
            "localhost:1", [topics.spaces, topics.operations], topics
        )

    [warning] = [r.getMessage() for r in caplog.records if "configs" in r.getMessage()]
    assert warning == (
        f"could not read the configs of topics {topics.operations}, {topics.spaces} (Kafka error "
        "29): whether they delete old events is not checked; grant this principal "
        "DESCRIBE_CONFIGS on them to have it checked at start"
    )
