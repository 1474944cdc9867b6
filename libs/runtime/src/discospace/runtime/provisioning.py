"""Creating the topics a service uses before it starts, with the right settings.

FastStream would create a missing topic with one partition and default settings; the spaces
and actuators topics must be compacted (they hold the latest fact per key), and every topic
gets the deployment's partition count. Creating a topic that exists is not an error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from discospace.events.topics import TopicNames

logger = logging.getLogger("discospace.runtime.provisioning")

_NO_ERROR = 0


def new_topics(
    names: Iterable[str], topics: TopicNames, partitions: int, replication: int
) -> list[NewTopic]:
    """The topic definitions for `names`: compacted where the topic layout says so."""
    return [
        NewTopic(
            name,
            partitions,
            replication,
            topic_configs={"cleanup.policy": "compact"} if topics.is_compacted(name) else {},
        )
        for name in sorted(set(names))
    ]


async def provision_topics(
    bootstrap_servers: str,
    names: Iterable[str],
    topics: TopicNames,
    partitions: int = 3,
    replication: int = 1,
) -> None:
    """Create the missing topics among `names`; existing ones are left as they are."""
    wanted = new_topics(names, topics, partitions, replication)
    if not wanted:
        return
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        response = await admin.create_topics(wanted)
        _warn_about_refusals(response.to_object()["topic_errors"])
        await _wait_for_leaders(admin, [topic.name for topic in wanted])
    finally:
        await admin.close()


def _warn_about_refusals(results: list[dict[str, Any]]) -> None:
    for result in results:
        code = result["error_code"]
        if code != _NO_ERROR and not issubclass(for_code(code), TopicAlreadyExistsError):
            logger.warning("could not create topic %s (Kafka error %s)", result["topic"], code)


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
