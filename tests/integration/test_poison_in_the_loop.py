"""Every kind of bad message on every partition of every topic, then a normal operation through
all the services, then every service restarted and the operation asked again (issue 13,
acceptance: "the poison-message test publishes each kind of bad message to every topic and then
runs a normal operation to completion, and restarts every service after it").

Before the fix, 5,000-level JSON and 5,000-digit numbers escaped the codec: 0 of 48 were
dead-lettered, each came back about once a second forever, a walk stayed at 0/80, and a
restarted explorer could not start at all.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.events import DeadLettered, decode
from discospace.runtime.security import client_kwargs
from discospace.testing.loop import Loop

pytestmark = pytest.mark.integration

POOL = "synthetic"
SERVICES = ("registry", "sampler", "projector", "explorer")


def poison() -> dict[str, bytes]:
    """One message of each kind a hostile producer may write."""
    noise = random.Random(13)
    return {
        "deep nesting": b'{"a":' * 5000 + b"1" + b"}" * 5000,
        "huge integer": b'{"type": "OperationRequested", "n": 1' + b"1" * 5000 + b"}",
        "invalid UTF-8": b'{"type": "\xc3\x28"}',
        "not an object": b"[1, 2, 3]",
        "random bytes": bytes(noise.getrandbits(8) for _ in range(512)),
        "unknown type": b'{"type": "NoSuchEvent", "schema_version": 1}',
        "newer version": b'{"type": "SpaceSubmitted", "schema_version": 99}',
        "fails validation": b'{"type": "MeasurementCompleted", "schema_version": 2}',
        "near the size limit": b'{"type": "SamplesRequested", "x": "' + b"a" * 900_000 + b'"}',
        "empty": b"",
    }


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("poison-loop"))
    try:
        for name in SERVICES:
            running.start(name)
        running.actuator("worker", POOL, {"experiments": [{"experiment": "benchmark"}]})
        running.wait_healthy()
        running.wait_for_catalog({"benchmark"})
        yield running
    finally:
        running.stop()


async def publish_everywhere(bootstrap: str, topics: list[str]) -> list[tuple[str, int, int]]:
    """Each kind of poison on every partition of every topic; (topic, partition, offset) each."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, max_request_size=2_000_000, **client_kwargs()
    )
    await producer.start()
    sent = []
    try:
        for topic in topics:
            for partition in sorted(await producer.partitions_for(topic)):
                for value in poison().values():
                    meta = await producer.send_and_wait(
                        topic, value, key=b"poison", partition=partition
                    )
                    sent.append((topic, partition, meta.offset))
    finally:
        await producer.stop()
    return sent


async def dead_letters(bootstrap: str, topic: str) -> list[DeadLettered]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", **client_kwargs()
    )
    records: list[Any] = []
    try:
        await consumer.start()
        while batch := await consumer.getmany(timeout_ms=2000):
            records += [record for part in batch.values() for record in part]
    finally:
        await consumer.stop()
    return [letter for r in records if isinstance(letter := decode(r.value), DeadLettered)]


def space(loop: Loop) -> str:
    spec = {
        "sample_store": "store-poison",
        "entity_space": [
            {"name": "model_name", "values": ["llama3-8b"]},
            {"name": "number_gpus", "values": [1, 2]},
            {"name": "batch_size", "values": [1, 2, 4, 8, 16]},
        ],
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }
    path = loop.workdir / "space.yaml"
    path.write_text(yaml.safe_dump(spec))
    return loop.cli_ok("space", "create", "-f", str(path)).strip()


def walk(loop: Loop, space_id: str) -> dict[str, Any]:
    path = loop.workdir / "walk.yaml"
    parameters = {"number_entities": "all", "batch_size": 4}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    answer = loop.cli_ok("operation", "create", "-f", str(path), "--space", space_id)
    return loop.wait_for_end(answer.strip().splitlines()[0], timeout_s=240)


def test_poison_everywhere_then_a_walk_completes_and_again_after_every_service_restarts(
    loop: Loop,
) -> None:
    topics = [*loop.topics.fixed(), loop.topics.measure(POOL)]
    topics.remove(loop.topics.dead_letter)
    sent = asyncio.run(publish_everywhere(loop.bootstrap, topics))
    assert len(sent) >= len(poison()) * len(topics)

    space_id = space(loop)
    first = walk(loop, space_id)
    assert first["status"] == "completed", first
    assert first["counts"]["measured"] == 10, first

    for name in [*SERVICES, "worker"]:
        loop.restart(name)
    again = walk(loop, space_id)
    assert again["status"] == "completed", again
    assert again["counts"]["reused"] == 10, again
    assert again["counts"]["measured"] == 0, again

    letters = asyncio.run(dead_letters(loop.bootstrap, loop.topics.dead_letter))
    set_aside = {(d.source_topic, d.source_partition, d.source_offset) for d in letters}
    assert [where for where in sent if where not in set_aside] == []
    assert all(letter.reason for letter in letters)
    # One dead letter per message and service that reads it: a copy published again (after a
    # restart, or by a second consumer of the same service) has the same event id, which every
    # reader of the dead-letter topic drops as a duplicate.
    per_service = {
        (d.consumer, d.source_topic, d.source_partition, d.source_offset) for d in letters
    }
    assert len({letter.event_id for letter in letters}) == len(per_service)
