"""Creating the topics a service uses before it starts, with the right settings.

FastStream would create a missing topic with one partition and default settings; the spaces
and actuators topics must be compacted (they hold the latest fact per key), every topic gets
the deployment's partition count, and its `max.message.bytes` is the service's
`max_message_bytes`, so the size limit is explicit on the broker and the same as the one the
producers enforce. Creating a topic that exists is not an error (it is left as it is).

Every topic keeps its events for good (`retention.ms` and `retention.bytes` -1): services
rebuild their state from the topics at every start, so an event the broker deleted is a fact
forgotten. Kafka deletes after a week by default: a sampler restarted after that would no
longer know what the measurements topic held, and would measure again what the store already
has. A topic that exists and deletes its events (created by hand, or by an older version) is
left as it is, with a warning at start naming it and the command that keeps its events.

This is also where a service first reaches Kafka at start (`runner._check_kafka`): a failure
to connect because of security (a refused login, an untrusted certificate) is a
`KafkaLoginError` with a sentence, not aiokafka's "unable to bootstrap".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    KafkaConnectionError,
    PolicyViolationError,
    TopicAlreadyExistsError,
    for_code,
)

from discospace.events import MAX_MESSAGE_BYTES
from discospace.events.topics import TopicNames
from discospace.runtime.security import KafkaSecurity, client_kwargs, login_error

logger = logging.getLogger("discospace.runtime.provisioning")

_NO_ERROR = 0


KEEP_EVERYTHING = {"retention.ms": "-1", "retention.bytes": "-1"}
"""The retention of every topic: none (the topics are the record every service rebuilds from)."""


def new_topics(
    names: Iterable[str],
    topics: TopicNames,
    partitions: int,
    replication: int,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> list[NewTopic]:
    """The topic definitions for `names`: compacted where the topic layout says so, each
    taking messages up to `max_message_bytes`."""
    return [
        NewTopic(
            name,
            partitions,
            replication,
            topic_configs=topic_configs(name, topics, max_message_bytes),
        )
        for name in sorted(set(names))
    ]


def topic_configs(name: str, topics: TopicNames, max_message_bytes: int) -> dict[str, str]:
    """The topic-level configs of a topic this code creates."""
    configs = {"max.message.bytes": str(max_message_bytes), **KEEP_EVERYTHING}
    if topics.is_compacted(name):
        configs["cleanup.policy"] = "compact"
    return configs


async def provision_topics(
    bootstrap_servers: str,
    names: Iterable[str],
    topics: TopicNames,
    partitions: int = 3,
    replication: int = 1,
    *,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    security: KafkaSecurity | None = None,
    request_timeout_ms: int = 40_000,
) -> None:
    """Create the missing topics among `names`; existing ones are left as they are.

    `request_timeout_ms`: how long each request to the broker may take (aiokafka's 40 s by
    default; a command-line client that should say "not answering" sooner passes less)."""
    wanted = new_topics(names, topics, partitions, replication, max_message_bytes)
    if not wanted:
        return
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers,
        request_timeout_ms=request_timeout_ms,
        **client_kwargs(security),
    )
    await _start(admin, bootstrap_servers, security)
    try:
        response = await admin.create_topics(wanted)
        results = response.to_object()["topic_errors"]
        _warn_about_refusals(results)
        await _wait_for_leaders(admin, [topic.name for topic in wanted])
        existing = [r["topic"] for r in results if r["error_code"] != _NO_ERROR]
        await _warn_about_deleting(admin, existing, bootstrap_servers)
    finally:
        await admin.close()


async def _start(
    admin: AIOKafkaAdminClient, bootstrap_servers: str, security: KafkaSecurity | None
) -> None:
    try:
        await admin.start()
    except KafkaConnectionError:
        await admin.close()
        await login_error(bootstrap_servers, security)
        raise


class TopicsRefusedError(Exception):
    """The broker refused to create a topic as asked (its partitions, replication or configs):
    a service would run without it, or on one the broker auto-creates with its own defaults
    (deleting old events, not compacted)."""


_AS_ASKED = (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidReplicationAssignmentError,
    InvalidConfigurationError,
    PolicyViolationError,
)
"""Refusals of what was asked, not of who asked (an authorization failure where an
administrator created the topics beforehand only warns)."""


def _warn_about_refusals(results: list[dict[str, Any]]) -> None:
    """Warn of each topic the broker did not create; raise `TopicsRefusedError` for the first
    refused as asked."""
    for result in results:
        code = result["error_code"]
        if code == _NO_ERROR or issubclass(for_code(code), TopicAlreadyExistsError):
            continue
        error = for_code(code)
        said = result.get("error_message") or error.__name__
        if issubclass(error, _AS_ASKED):
            raise TopicsRefusedError(
                f"Kafka refused to create topic {result['topic']} ({said}): set the service's "
                "topic_partitions and topic_replication (DISCOSPACE_<SERVICE>_TOPIC_PARTITIONS, "
                "..._TOPIC_REPLICATION) to what the cluster allows."
            )
        logger.warning(
            "could not create topic %s (Kafka error %s: %s)", result["topic"], code, said
        )


async def _warn_about_deleting(
    admin: AIOKafkaAdminClient, names: list[str], bootstrap_servers: str
) -> None:
    """Warn about each of the existing topics `names` that deletes old events: a service
    rebuilding from it would forget them. Never fails the start."""
    if not names:
        return
    try:
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        )
    except Exception as error:  # a broker that refuses DescribeConfigs still runs discospace
        logger.info("could not read the configs of topics %s: %s", names, error)
        return
    deleting: dict[str, dict[str, str | None]] = {}
    unread: dict[str, int] = {}
    for response in responses:
        for resource in response.resources:
            error_code, _, _, name, entries = resource[:5]
            configs = {entry[0]: entry[1] for entry in entries}
            if error_code != _NO_ERROR:
                unread[name] = error_code
            elif deletes_events(configs):
                deleting[name] = configs
    if unread:  # a principal without DESCRIBE_CONFIGS: the broker answers each topic with 29
        logger.warning(
            "could not read the configs of topics %s (Kafka error %s): whether they delete old "
            "events is not checked; grant this principal DESCRIBE_CONFIGS on them to have it "
            "checked at start",
            ", ".join(sorted(unread)),
            ", ".join(str(code) for code in sorted(set(unread.values()))),
        )
    for name, configs in sorted(deleting.items()):
        logger.warning(
            "topic %s deletes old events (retention.ms=%s, retention.bytes=%s): services that "
            "rebuild from it at start will forget them, and a sampler will measure again what "
            "the store holds. Keep them: kafka-configs.sh --bootstrap-server %s --alter "
            "--entity-type topics --entity-name %s --add-config retention.ms=-1,retention.bytes=-1",
            name,
            configs.get("retention.ms"),
            configs.get("retention.bytes"),
            bootstrap_servers,
            name,
        )


def deletes_events(configs: dict[str, str | None]) -> bool:
    """Whether a topic with these configs deletes events by age or size."""
    if "delete" not in (configs.get("cleanup.policy") or "delete").split(","):
        return False
    return any(configs.get(name, "-1") != "-1" for name in KEEP_EVERYTHING)


async def _wait_for_leaders(
    admin: AIOKafkaAdminClient, names: list[str], timeout_s: float = 10.0
) -> None:
    """A created topic is usable once each partition has a leader; consumers that start
    earlier log errors about unknown topics until it has."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        described = await admin.describe_topics(names)
        if all(_led(topic) for topic in described):
            return
        await asyncio.sleep(0.05)
    logger.warning("some of the topics %s have no partition leader after %ss", names, timeout_s)


def _led(topic: dict[str, Any]) -> bool:
    partitions = topic.get("partitions") or []
    return topic.get("error_code") == _NO_ERROR and all(p["leader"] >= 0 for p in partitions)
