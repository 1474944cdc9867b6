"""The projector's handler without its app: a batch of records, each decoded once, into the
buffer with where it was read (unreadable ones dead-lettered); and the app's batch subscription,
in memory, handling every batch on the event loop, never in a worker thread."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread
import httpx
import pytest
from aiokafka import ConsumerRecord
from faststream.asgi import AsgiFastStream
from faststream.kafka import TestKafkaBroker
from prometheus_client import CollectorRegistry

from discospace.events import EventDecodeError, TopicNames, encode
from discospace.projector.adapters import StoreWorker
from discospace.projector.app import create_app
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.handlers import ProjectorDeps, Record, on_records, read_event
from discospace.projector.metrics import ProjectorMetrics
from discospace.projector.settings import ProjectorSettings
from discospace.projector.writing import Read, ReadEvent, ReadPast
from discospace.store.client import StoreSettings
from discospace.store.errors import StoreError


def _record(topic: str, partition: int, offset: int, key: bytes | None, value: bytes) -> Record:
    return ConsumerRecord(
        topic=topic,
        partition=partition,
        offset=offset,
        timestamp=0,
        timestamp_type=0,
        key=key,
        value=value,
        checksum=None,
        serialized_key_size=len(key or b""),
        serialized_value_size=len(value),
        headers=(),
    )


def _deps() -> tuple[ProjectorDeps, list[Read], list[tuple[Record, EventDecodeError]]]:
    written: list[Read] = []
    dead: list[tuple[Record, EventDecodeError]] = []

    async def write(batch: Sequence[Read]) -> int:
        written.extend(batch)
        return len(batch)

    async def dead_letter(record: Record, error: EventDecodeError) -> None:
        dead.append((record, error))

    metrics = ProjectorMetrics.create(CollectorRegistry())
    store = StoreWorker(StoreSettings(), "projector", metrics)
    return ProjectorDeps(store, ProjectionBuffer(write, metrics), dead_letter), written, dead


async def test_an_event_goes_to_the_buffer_with_the_topic_partition_offset_and_key_it_came_from(
    story,
):
    space = story.space_a
    deps, written, _ = _deps()

    await on_records([_record("t.spaces", 2, 41, space.key(), encode(space))], deps)
    await deps.buffer.flush()

    [read] = written
    assert read.event == space
    record = read.record
    assert (record.topic, record.partition, record.offset) == ("t.spaces", 2, 41)
    assert (record.event_id, record.key) == (space.event_id, space.key().decode())


async def test_an_unreadable_record_is_dead_lettered_and_the_events_around_it_keep_their_order(
    story,
):
    events = story.events[:4]
    records = [_record("t.operations", 0, i, b"op-a", encode(e)) for i, e in enumerate(events)]
    broken = _record("t.operations", 0, 99, b"op-a", b"not json at all")
    deps, written, dead = _deps()

    await on_records([*records[:2], broken, *records[2:]], deps)
    await deps.buffer.flush()

    assert [read.event for read in written if isinstance(read, ReadEvent)] == events
    assert written[2] == ReadPast("t.operations", 0, 99)  # its offset counts as read
    [(record, error)] = dead
    assert record is broken
    assert error.kind == "malformed"


async def test_a_dead_letter_the_broker_refuses_is_tried_again_until_it_is_taken() -> None:
    deps, _, dead = _deps()
    refusals: list[int] = []

    async def flaky(record: Record, error: EventDecodeError) -> None:
        if len(refusals) < 2:
            refusals.append(record.offset)
            raise ConnectionError("broker away")
        dead.append((record, error))

    broken = _record("t.operations", 0, 7, None, b"{}")
    deps = ProjectorDeps(deps.store, deps.buffer, flaky, retry_s=0.01)

    await on_records([broken], deps)

    assert refusals == [7, 7]
    assert [record.offset for record, _ in dead] == [7]


async def test_in_memory_every_event_is_buffered_with_its_record_and_no_worker_thread(
    story, monkeypatch
):
    buffered: list[ReadEvent] = []
    hops: list[object] = []

    async def add_many(buffer: ProjectionBuffer, items: Sequence[ReadEvent]) -> None:
        buffered.extend(items)

    run_sync = anyio.to_thread.run_sync

    async def noting(function: object, *args: object, **kwargs: object) -> object:
        hops.append(function)
        return await run_sync(function, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ProjectionBuffer, "add_many", add_many)
    topics = TopicNames.unique("projector")
    service = create_app(ProjectorSettings(topic_prefix=topics.prefix), store=StoreSettings())
    events = story.events[:5]
    async with TestKafkaBroker(service.broker) as broker:
        monkeypatch.setattr(anyio.to_thread, "run_sync", noting)
        for event in events:
            await broker.publish(encode(event), event.topic(topics), key=event.key())

    assert [read.event for read in buffered] == events
    assert [read.record.topic for read in buffered] == [event.topic(topics) for event in events]
    assert hops == []


async def test_a_read_before_the_store_is_open_is_a_transient_failure_not_a_poison_one() -> None:
    from discospace.runtime import is_transient

    store = StoreWorker(StoreSettings(), "projector", ProjectorMetrics.create(CollectorRegistry()))
    with pytest.raises(StoreError, match="still starting") as raised:
        await store.read(lambda views: views)

    assert is_transient(raised.value)


def test_a_version_1_event_keeps_its_json_as_read_and_decodes_back_to_itself(story) -> None:
    import json

    from discospace.events import decode

    space = story.space_a
    spaced = json.dumps(json.loads(encode(space)), indent=1).encode()  # another producer's form
    read = read_event(_record("t.spaces", 0, 1, space.key(), spaced))

    assert read.record.payload == spaced.decode()
    assert decode(read.record.payload) == space


def test_an_event_at_a_later_current_version_keeps_its_json_as_read(story) -> None:
    import json

    from discospace.events import MeasurementCompleted, decode

    completed = next(e for e in story.events if isinstance(e, MeasurementCompleted))
    assert completed.schema_version == completed.current_version() > 1
    spaced = json.dumps(json.loads(encode(completed)), indent=1).encode()
    read = read_event(_record("t.measurements", 0, 1, completed.key(), spaced))

    assert read.record.payload == spaced.decode()
    assert decode(read.record.payload) == completed


def test_an_event_of_an_earlier_version_is_stored_upcast_as_its_current_json(story) -> None:
    import json

    from discospace.events import MeasurementCompleted

    completed = next(e for e in story.events if isinstance(e, MeasurementCompleted))
    assert completed.uncertainty == {}, "version 1 had none: the upcast gives it none"
    older = json.loads(encode(completed))
    older["schema_version"] = 1
    del older["uncertainty"]
    read = read_event(_record("t.measurements", 0, 1, completed.key(), json.dumps(older).encode()))

    assert read.event == completed
    assert read.record.payload == completed.model_dump_json()
    assert json.loads(read.record.payload)["schema_version"] == completed.current_version()


async def test_a_store_server_gone_since_start_is_unreachable_so_views_answer_503() -> None:
    """clickhouse-connect's OperationalError (the server went away after the projector opened
    it) failed the view with 500, "the view failed", as a defect would."""
    from clickhouse_connect.driver.exceptions import OperationalError

    from discospace.projector.routes import view_routes
    from discospace.store.errors import StoreUnreachableError

    settings = StoreSettings(url="http://ch.example:8123")
    store = StoreWorker(settings, "projector", ProjectorMetrics.create(CollectorRegistry()))
    store._views = object()  # type: ignore[assignment]  # opened, then the server went away

    def gone(views):
        raise OperationalError(
            "HTTPConnectionPool(host='ch.example', port=8123): Connection refused"
        )

    with pytest.raises(StoreUnreachableError, match="does not answer: connection refused"):
        await store.read(gone)
    app = AsgiFastStream(asgi_routes=view_routes(lambda function: store.read(gone)))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://projector") as client:
        answer = await client.get("/spaces")
    assert answer.status_code == 503
    assert answer.json()["error"].startswith("the store cannot be read: ClickHouse at http://ch")


async def test_health_says_failing_while_the_store_refuses_every_write(story) -> None:
    """The views answered with what was written before, the buffer filled, and /health said
    'ok': only a counter showed that nothing had been written for minutes."""
    from discospace.events import TopicNames

    refusals = 0

    async def refuse(batch: Sequence[Read]) -> int:
        nonlocal refusals
        refusals += 1
        raise StoreError("ClickHouse at http://ch:8123 does not answer")

    topics = TopicNames.unique("health")
    service = create_app(ProjectorSettings(topic_prefix=topics.prefix), store=StoreSettings())
    [check] = service.health_problems
    buffer = check.__self__  # the app's own buffer, which /health asks
    assert isinstance(buffer, ProjectionBuffer)
    buffer._write = refuse
    buffer.retry_s = 0.01

    async def ping(timeout: float) -> bool:
        return True  # the broker answers: the store is what fails

    service.broker.ping = ping  # type: ignore[method-assign]
    await buffer.start()
    await buffer.add_many([read_event(_record("t", 0, 0, None, encode(story.space_a)))])
    transport = httpx.ASGITransport(app=service.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://p") as client:
            while refusals < 3:
                await anyio.sleep(0.01)
            await anyio.sleep(0.05)
            answer = await client.get("/health")
    finally:
        await buffer.stop()

    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "failing"
    assert body["problems"][0].startswith("the store refused the last ")
    assert body["problems"][0].endswith("StoreError: ClickHouse at http://ch:8123 does not answer")
