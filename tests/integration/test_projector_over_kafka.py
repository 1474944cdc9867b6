"""The projector writes every topic's events, measure topics included, into the store (chDB)."""

from __future__ import annotations

import uuid

import pytest

from discospace.events import MeasurementRequested, new_event
from discospace.projector.app import create_app
from discospace.projector.settings import ProjectorSettings
from discospace.store.client import StoreSettings, connect
from discospace.store.events import read_events
from discospace.testing.kafka import create_topics

pytestmark = pytest.mark.integration


def measurement_request(pool: str) -> MeasurementRequested:
    return new_event(
        MeasurementRequested,
        operation_id="op-1",
        request_id="req-1",
        space_id="space-5e1d0c9b7a24",
        sample_store="store-a",
        entity_id="9f86d081884c7d65",
        entity_values={"batch_size": 4, "number_gpus": 2},
        experiment_id="finetune-full-v1.2.0",
        experiment={"actuator": "SFTTrainer", "experiment": "finetune-full-v1.2.0"},
        pool=pool,
    )


async def test_events_of_every_topic_land_once_in_the_store_with_where_they_were_read(
    kafka,
    kafka_bootstrap,
    topics,
    run_service,
    wait_until,
    chdb_data_dir,
    make_catalog,
    make_submission,
):
    store = StoreSettings(url=None, data_dir=chdb_data_dir, database=f"it_{uuid.uuid4().hex[:12]}")
    await create_topics(kafka_bootstrap, {topics.measure("a100"): 1})
    projector = create_app(
        ProjectorSettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix),
        store=store,
    )
    events = [make_submission(), make_catalog(), measurement_request("a100")]
    client = None
    try:
        async with run_service(projector):
            await kafka.publish(*events, topics=topics)
            await kafka.publish(events[0], topics=topics)
            client = connect(store)
            await wait_until(lambda: len(read_events(client)) == 3)
            stored = {record.event_id: record for record in read_events(client)}
    finally:
        if client is not None:
            client.command(
                "DROP DATABASE IF EXISTS {db:Identifier}", parameters={"db": store.database}
            )
            client.close()

    assert set(stored) == {event.event_id for event in events}
    request = stored[events[2].event_id]
    assert (request.type, request.topic, request.offset) == (
        "MeasurementRequested",
        topics.measure("a100"),
        0,
    )
    assert request.correlation_id == "op-1"
