"""The explorer's shell, in memory: both topics reach the operation's history."""

from __future__ import annotations

from faststream.kafka import TestKafkaBroker

from discospace.events import MeasurementStarted, OperationRequested, TopicNames, encode
from discospace.explorer.app import create_app
from discospace.explorer.settings import ExplorerSettings

REQUESTED = {
    "event_id": "8e2d4c6a-0b1f-4e3d-9c5b-7a6f8e9d0c12",
    "occurred_at": "2026-11-21T17:02:00Z",
    "operation_id": "op-1",
    "space_id": "space-5e1d0c9b7a24",
    "operator": "random_walk",
    "parameters": {"number_entities": 6, "batch_size": 2, "seed": 7},
    "requested_by": "alice",
}
STARTED = {
    "event_id": "4b9d8f8e-1c1e-5c4f-9f4b-1d8e0f3b2a10",
    "occurred_at": "2026-11-21T17:05:00Z",
    "operation_id": "op-1",
    "request_id": "req-1",
    "space_id": "space-5e1d0c9b7a24",
    "sample_store": "store-a",
    "entity_id": "9f86d081884c7d65",
    "entity_values": {"batch_size": 4},
    "experiment_id": "finetune-full-v1.2.0",
    "worker_id": "a100-w0",
}


async def test_operation_and_measurement_events_are_folded_into_the_operations_history():
    topics = TopicNames.unique("explorer")
    service = create_app(ExplorerSettings(topic_prefix=topics.prefix))
    requested = OperationRequested.model_validate(REQUESTED)
    started = MeasurementStarted.model_validate(STARTED)

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(requested), topics.operations)
        await broker.publish(encode(started), topics.measurements)

    assert service.state.history("op-1") == [requested, started]
