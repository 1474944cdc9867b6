"""The projector's handler without its app: an event and where it was read, into the buffer;
and the app's subscription, in memory, reading where each event came from on the event loop."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from aiokafka import ConsumerRecord
from faststream.kafka import TestKafkaBroker
from prometheus_client import CollectorRegistry

from discospace.events import TopicNames, encode
from discospace.projector.adapters import StoreWorker
from discospace.projector.app import create_app
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.handlers import ProjectorDeps, on_event
from discospace.projector.metrics import ProjectorMetrics
from discospace.projector.settings import ProjectorSettings
from discospace.projector.writing import ReadEvent
from discospace.store.client import StoreSettings
from discospace.store.errors import StoreError


def _record(topic: str, partition: int, offset: int, key: bytes) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        timestamp=0,
        timestamp_type=0,
        key=key,
        value=b"",
        checksum=None,
        serialized_key_size=len(key),
        serialized_value_size=0,
        headers=(),
    )


def _deps(record: ConsumerRecord[bytes, bytes]) -> tuple[ProjectorDeps, list[ReadEvent]]:
    written: list[ReadEvent] = []

    async def write(batch: Sequence[ReadEvent]) -> int:
        written.extend(batch)
        return len(batch)

    metrics = ProjectorMetrics.create(CollectorRegistry())
    store = StoreWorker(StoreSettings(), "projector", metrics)
    return ProjectorDeps(store, ProjectionBuffer(write, metrics), lambda: record), written


async def test_an_event_goes_to_the_buffer_with_the_topic_partition_offset_and_key_it_came_from(
    story,
):
    space = story.space_a
    deps, written = _deps(_record("t.spaces", 2, 41, space.key()))

    await on_event(space, deps)
    await deps.buffer.flush()

    [read] = written
    assert read.event == space
    record = read.record
    assert (record.topic, record.partition, record.offset) == ("t.spaces", 2, 41)
    assert (record.event_id, record.key) == (space.event_id, space.key().decode())


async def test_in_memory_every_event_is_buffered_with_its_record_and_no_worker_thread(
    story, monkeypatch
):
    buffered: list[ReadEvent] = []

    async def add(buffer: ProjectionBuffer, item: ReadEvent) -> None:
        buffered.append(item)

    monkeypatch.setattr(ProjectionBuffer, "add", add)
    topics = TopicNames.unique("projector")
    service = create_app(ProjectorSettings(topic_prefix=topics.prefix), store=StoreSettings())
    started: list[str] = []
    start = threading.Thread.start

    def noting(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    events = story.events[:5]
    async with TestKafkaBroker(service.broker) as broker:
        threading.Thread.start = noting  # type: ignore[method-assign]
        try:
            for event in events:
                await broker.publish(encode(event), event.topic(topics), key=event.key())
        finally:
            threading.Thread.start = start  # type: ignore[method-assign]

    assert [read.event for read in buffered] == events
    assert [read.record.topic for read in buffered] == [event.topic(topics) for event in events]
    assert started == []


async def test_a_read_before_the_store_is_open_is_a_transient_failure_not_a_poison_one() -> None:
    from discospace.runtime import is_transient

    store = StoreWorker(StoreSettings(), "projector", ProjectorMetrics.create(CollectorRegistry()))
    with pytest.raises(StoreError, match="still starting") as raised:
        await store.read(lambda views: views)

    assert is_transient(raised.value)
