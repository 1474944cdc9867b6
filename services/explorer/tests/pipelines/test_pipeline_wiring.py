"""The explorer's shell with a pipeline, in memory: a space it derives goes to the registry's
topic, the registry's answer (registered or rejected) is read from the spaces topic, and the
child operation goes to the operations topic."""

from __future__ import annotations

from typing import Any

from faststream.kafka import TestKafkaBroker
from faststream.message import StreamMessage

from discospace.events import (
    Event,
    OperationRequested,
    PipelineJobFailed,
    PipelineJobStarted,
    SpaceRegistered,
    SpaceSubmitted,
    TopicNames,
    decode,
    encode,
)
from discospace.explorer.app import create_app
from discospace.explorer.settings import ExplorerSettings

LONGER = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}
MEASURE = {
    "stages": {
        "evaluate": [
            {
                "name": "again",
                "kind": "measure",
                "entities": [{"batch_size": 2, "lr": 0.1}],
                "experiment": LONGER,
            }
        ]
    }
}


async def _event(message: StreamMessage[Any]) -> Event:
    return decode(message.body)


async def _publish(broker: Any, topics: TopicNames, event: Event) -> None:
    await broker.publish(encode(event), event.topic(topics), key=event.key())


async def test_a_measure_job_submits_its_space_and_asks_for_its_child_once_registered(world):
    w = world()
    w.register()
    space = w.log[-1]
    assert isinstance(space, SpaceRegistered)
    topics = TopicNames.unique("explorer")
    service = create_app(ExplorerSettings(topic_prefix=topics.prefix))
    operations: list[Event] = []
    submissions: list[Event] = []

    @service.broker.subscriber(topics.operations, group_id="observer", decoder=_event)
    async def observe(event: Event) -> None:
        operations.append(event)

    @service.broker.subscriber(topics.space_submissions, group_id="registry", decoder=_event)
    async def registry(event: Event) -> None:
        submissions.append(event)

    w.request("op-1", space.space_id, MEASURE, seed=1)
    [request] = w.of(OperationRequested, "op-1")
    async with TestKafkaBroker(service.broker) as broker:
        await service.state.go_live()
        await _publish(broker, topics, space)
        await _publish(broker, topics, request)
        [submitted] = submissions
        assert isinstance(submitted, SpaceSubmitted)
        assert not [e for e in operations if isinstance(e, OperationRequested) and e != request]
        await _publish(broker, topics, w.registry_answer(submitted))
        await service.state.stop()

    [started] = [e for e in operations if isinstance(e, PipelineJobStarted)]
    [child] = [e for e in operations if isinstance(e, OperationRequested) and e != request]
    assert (child.operation_id, child.operator, child.parent_operation_id) == (
        "op-1-again",
        "points",
        "op-1",
    )
    assert child.space_id == started.space_id


async def test_a_space_the_registry_rejects_fails_the_job(world):
    w = world()
    w.register()
    space = w.log[-1]
    topics = TopicNames.unique("explorer")
    service = create_app(ExplorerSettings(topic_prefix=topics.prefix))
    operations: list[Event] = []
    submissions: list[SpaceSubmitted] = []

    @service.broker.subscriber(topics.operations, group_id="observer", decoder=_event)
    async def observe(event: Event) -> None:
        operations.append(event)

    @service.broker.subscriber(topics.space_submissions, group_id="registry", decoder=_event)
    async def registry(event: SpaceSubmitted) -> None:
        submissions.append(event)

    w.request("op-1", space.space_id, MEASURE, seed=1)
    [request] = w.of(OperationRequested, "op-1")
    w.catalog = ()
    async with TestKafkaBroker(service.broker) as broker:
        await service.state.go_live()
        await _publish(broker, topics, space)
        await _publish(broker, topics, request)
        await _publish(broker, topics, w.registry_answer(submissions[0]))
        await service.state.stop()

    [failed] = [e for e in operations if isinstance(e, PipelineJobFailed)]
    assert failed.reason.endswith("experiment 'bench' is not in the catalog")
