"""The projector app in this process, on the real broker and a real chDB store, fresh topics."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pandas as pd
import pytest
from aiokafka import AIOKafkaProducer

from discospace.events import Event, TopicNames, encode
from discospace.projector.app import create_app
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service
from discospace.store.client import StoreSettings, connect

pytestmark = pytest.mark.integration


@asynccontextmanager
async def running(
    bootstrap: str, topics: TopicNames, store: StoreSettings, group: str | None = None
) -> AsyncIterator[Service]:
    """The projector started as `python -m discospace.projector` would start it, in-process."""
    settings = ProjectorSettings(
        kafka_bootstrap_servers=bootstrap,
        topic_prefix=topics.prefix,
        group_id=group,
        retry_backoff_s=0.1,
    )
    service = create_app(settings, store=store)
    async with service.app.start_lifespan_context():
        yield service


async def publish(bootstrap: str, topics: TopicNames, events: list[Event], *raw: bytes) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for event in events:
            await producer.send_and_wait(event.topic(topics), encode(event), key=event.key())
        for value in raw:
            await producer.send_and_wait(topics.operations, value, key=b"op-a")
    finally:
        await producer.stop()


async def eventually(check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """The first truthy answer of `check` (a coroutine function), polled until `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = await check()
        if answer:
            return answer
        assert time.monotonic() < deadline, f"not true after {timeout_s}s"
        await asyncio.sleep(0.2)


def _stored_count(service: Service, table: str) -> Callable[[], Any]:
    async def count() -> int:
        return await service.state.read(
            lambda views: int(views.client.command(f"SELECT count() FROM {table} FINAL"))
        )

    return count


async def _all_written(service: Service, expected: int) -> None:
    count = _stored_count(service, "events")
    await eventually(lambda: _at_least(count, expected))


async def _at_least(count: Callable[[], Any], expected: int) -> bool:
    return await count() >= expected


def _api(service: Service) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=service.app)
    return httpx.AsyncClient(transport=transport, base_url="http://projector")


@pytest.fixture
def topics() -> TopicNames:
    return TopicNames.unique("projector")


async def test_every_view_is_served_from_a_history_read_off_the_broker(
    kafka_bootstrap, topics, fresh_store, story
) -> None:
    await publish(kafka_bootstrap, topics, story.events)
    async with running(kafka_bootstrap, topics, fresh_store()) as projector:
        await _all_written(projector, len(story.events))
        async with _api(projector) as api:
            spaces = (await api.get("/spaces")).json()
            rows = (await api.get("/space/entities", params={"id": story.space_a.space_id})).json()
            progress = (await api.get("/operation", params={"id": "op-a"})).json()
            parquet = await api.get(
                "/space/entities",
                params={"id": story.space_b.space_id, "include": "measured", "format": "parquet"},
            )
            health = await api.get("/health")
            metrics = (await api.get("/metrics")).text

    assert {s["status"] for s in spaces} == {"registered", "rejected"}
    assert [row["status"] for row in rows].count("measured") == 2
    assert {row["status"] for row in rows} == {"measured", "elsewhere", "unmeasured", "unsampled"}
    assert (progress["counts"]["requested"], progress["counts"]["in_flight"]) == (6, 2)
    assert progress["best"]["value"] == 3000.5
    assert len(pd.read_parquet(io.BytesIO(parquet.content))) == 2  # the third was reused
    assert health.status_code == 200
    assert "discospace_projected_events_total" in metrics


async def test_an_unreadable_message_is_dead_lettered_and_the_rest_still_lands(
    kafka_bootstrap, topics, fresh_store, story
) -> None:
    await publish(kafka_bootstrap, topics, story.events[:5], b"not json at all")
    await publish(kafka_bootstrap, topics, story.events[5:])
    async with running(kafka_bootstrap, topics, fresh_store()) as projector:
        dead_letters = _stored_count(projector, "events")
        # every event of the story, plus the dead letter the projector itself published
        await eventually(lambda: _at_least(dead_letters, len(story.events) + 1))
        kinds = await projector.state.read(
            lambda views: (
                views.client.query(
                    "SELECT type, count() FROM events FINAL GROUP BY type"
                ).result_rows
            )
        )
    assert dict(kinds)["DeadLettered"] == 1


async def test_a_restart_that_reads_everything_again_writes_no_duplicate(
    kafka_bootstrap, topics, fresh_store, story
) -> None:
    store = fresh_store()
    await publish(kafka_bootstrap, topics, story.events)
    async with running(kafka_bootstrap, topics, store) as projector:
        await _all_written(projector, len(story.events))
    await publish(kafka_bootstrap, topics, story.events)  # every event delivered a second time
    async with running(kafka_bootstrap, topics, store) as projector:
        metrics = projector.state.metrics
        await eventually(lambda: _read_all(metrics.skipped, len(story.events)))  # copies
        assert not await _read_all(metrics.projected, 1)
        counts = {t: await _stored_count(projector, t)() for t in ("events", "measurements")}
        progress = await projector.state.read(lambda views: views.operation("op-a"))
    assert counts == {"events": len(story.events), "measurements": _measurement_events(story)}
    assert progress.counts.requested == 6


async def test_a_restart_resumes_from_the_store_and_reads_nothing_it_wrote(
    kafka_bootstrap, topics, fresh_store, story
) -> None:
    store = fresh_store()
    await publish(kafka_bootstrap, topics, story.events[:-1])
    async with running(kafka_bootstrap, topics, store) as projector:
        await _all_written(projector, len(story.events) - 1)
    raw_rows = _raw_count(store)
    # another group has no committed offsets at all: only the store's offsets say where to go on
    async with running(kafka_bootstrap, topics, store, group="another-group") as projector:
        await publish(kafka_bootstrap, topics, story.events[-1:])
        await _all_written(projector, len(story.events))
        metrics = projector.state.metrics
        assert await _read_all(metrics.projected, 1)
        assert not await _read_all(metrics.projected, 2)
        registry = projector.metrics.registry
        assert registry.get_sample_value("discospace_projection_skipped_events_total") == 0
    assert _raw_count(store) == raw_rows + 1


def _raw_count(store: StoreSettings) -> int:
    client = connect(store)
    try:
        return int(client.command("SELECT count() FROM events"))
    finally:
        client.close()


async def _read_all(counter: Any, expected: int) -> bool:
    total = sum(
        sample.value for sample in counter.collect()[0].samples if sample.name.endswith("_total")
    )
    return total >= expected


def _measurement_events(story) -> int:
    return sum(e.type.startswith("Measurement") for e in story.events)


async def test_a_fresh_store_is_rebuilt_from_the_topics_whatever_the_group_committed(
    kafka_bootstrap, topics, fresh_store, story
) -> None:
    await publish(kafka_bootstrap, topics, story.events)
    async with running(kafka_bootstrap, topics, fresh_store()) as projector:
        await _all_written(projector, len(story.events))
    rebuilt = fresh_store()
    async with running(kafka_bootstrap, topics, rebuilt) as projector:
        await _all_written(projector, len(story.events))
        table = await projector.state.read(lambda views: views.entities(story.space_a.space_id))
    assert len(table) == 16
    client = connect(rebuilt)
    try:
        offsets = client.query("SELECT sum(offset) FROM consumer_offsets FINAL").result_rows
    finally:
        client.close()
    assert offsets[0][0] == len(story.events)


async def test_a_pipelines_jobs_and_children_are_served_from_events_read_off_the_broker(
    kafka_bootstrap, topics, fresh_store, pipeline_story
) -> None:
    pipeline_story.finish()
    events = pipeline_story.history.events
    await publish(kafka_bootstrap, topics, events)
    async with running(kafka_bootstrap, topics, fresh_store()) as projector:
        await _all_written(projector, len(events))
        async with _api(projector) as api:
            progress = (await api.get("/operation", params={"id": "op-p"})).json()
            children = (await api.get("/operations", params={"parent": "op-p"})).json()

    assert [(job["stage"], job["job"], job["status"]) for job in progress["jobs"]] == [
        ("probe", "probe_walk", "completed"),
        ("refine", "narrow", "completed"),
        ("execute", "search", "completed"),
        ("evaluate", "recheck", "optional-failed"),
    ]
    search = progress["jobs"][2]
    assert (search["child_operation_id"], search["child"]["done"]) == ("op-p-search", 2)
    assert progress["jobs"][1]["result"]["narrowed"] == {"batch_size": [2, 4]}
    assert (progress["status"], progress["done"], progress["best"]["value"]) == (
        "completed",
        4,
        2500.0,
    )
    assert [child["operation_id"] for child in children] == [
        "op-p-probe_walk",
        "op-p-search",
        "op-p-recheck",
    ]
    assert {child["parent_operation_id"] for child in children} == {"op-p"}
