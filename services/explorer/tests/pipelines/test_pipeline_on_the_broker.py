"""A pipeline through the real explorer on the real broker; the test plays the registry, the
sampler and the actuators over Kafka (the fake `World`, owning no operation, answers what it
reads). The explorer is stopped during the execute stage and another one goes on: no job is
run twice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.events import (
    Event,
    MeasurementCompleted,
    OperationCompleted,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobStarted,
    SpaceRegistered,
    TopicNames,
    decode,
    encode,
)
from discospace.explorer.app import create_app
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime import Service
from discospace.testing.kafka import create_topics, delete_topics

pytestmark = pytest.mark.integration
TIMEOUT_S = 90.0
LOSS = {"property": "loss", "direction": "min"}
LONGER = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}
HARDWARE = {
    "stages": {
        "probe": [
            {
                "name": "probe",
                "kind": "operation",
                "operator": "random_walk",
                "parameters": {"number_entities": 8, "batch_size": 4},
            }
        ],
        "refine": [
            {"name": "pruned", "kind": "hook", "hook": "prune_invalid", "args": {"job": "probe"}},
            {
                "name": "narrowed",
                "kind": "hook",
                "hook": "k_sigma",
                "args": {"job": "probe", "space": "${pruned.space_id}", "k": 3, "objective": LOSS},
            },
        ],
        "execute": [
            {
                "name": "search",
                "kind": "operation",
                "space": "${narrowed.space_id}",
                "operator": "optuna_tpe",
                "parameters": {"number_entities": 3, "objective": LOSS},
            },
            {
                "name": "top",
                "kind": "hook",
                "hook": "top_k",
                "args": {"job": "search", "k": 2, "objective": LOSS},
            },
        ],
        "evaluate": [
            {
                "name": "longer",
                "kind": "measure",
                "entities": "${top.entities}",
                "experiment": LONGER,
            }
        ],
    }
}


class Services:
    """The registry, the sampler and the actuators over Kafka: reads every topic the explorer
    writes or reads, hands each event to the fake `World` and publishes its answers."""

    def __init__(self, bootstrap: str, topics: TopicNames, world: Any) -> None:
        self.bootstrap, self.topics, self.world = bootstrap, topics, world
        self.seen: list[Event] = []
        self.hold = False

    async def __aenter__(self) -> Services:
        self.producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap)
        read = [self.topics.spaces, self.topics.operations, self.topics.measurements]
        self.consumer = AIOKafkaConsumer(
            *read,
            self.topics.space_submissions,
            bootstrap_servers=self.bootstrap,
            auto_offset_reset="earliest",
        )
        await self.producer.start()
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.stop()
        await self.producer.stop()

    async def publish(self, *events: Event) -> None:
        for event in events:
            await self.producer.send_and_wait(
                event.topic(self.topics), encode(event), key=event.key()
            )

    async def play(self) -> None:
        """Read what is new and answer it (measurements held back while `hold`)."""
        batch = await self.consumer.getmany(timeout_ms=100)
        for record in [r for part in batch.values() for r in part]:
            event = decode(record.value)
            self.seen.append(event)
            self.world.hold = self.hold
            self.world.deliver(event)
            answers, self.world.queue = list(self.world.queue), []
            for answer in answers:
                if isinstance(answer, SpaceRegistered):
                    self.world.deliver(answer)  # the sampler knows a space once registered
            await self.publish(*answers)
        if not self.hold and self.world.held:
            held, self.world.held = list(self.world.held), []
            await self.publish(*held)

    async def until(self, check: Callable[[], bool], timeout_s: float = TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            assert time.monotonic() < deadline, f"not true after {timeout_s}s: {self.recent()}"
            await self.play()

    def recent(self) -> list[str]:
        return [f"{e.type} {getattr(e, 'operation_id', '')}" for e in self.seen[-12:]]

    def of(self, kind: type[Event], operation_id: str | None = None) -> list[Any]:
        return [
            e
            for e in self.seen
            if isinstance(e, kind)
            and (operation_id is None or getattr(e, "operation_id", None) == operation_id)
        ]


@asynccontextmanager
async def running(service: Service) -> AsyncIterator[Service]:
    async with service.app.start_lifespan_context():
        yield service


@pytest.fixture
async def topics(kafka_bootstrap: str) -> AsyncIterator[TopicNames]:
    names = TopicNames.unique("pipeline")
    fixed = {
        names.spaces: 1,
        names.space_submissions: 1,
        names.operations: 3,
        names.measurements: 3,
        names.dead_letter: 1,
    }
    await create_topics(kafka_bootstrap, fixed)
    yield names
    await delete_topics(kafka_bootstrap, list(fixed))


def _explorer(kafka_bootstrap: str, topics: TopicNames) -> Service:
    settings = ExplorerSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        http_port=0,
        session_timeout_s=6.0,
    )
    return create_app(settings)


async def test_a_pipeline_survives_a_restart_of_the_explorer_during_its_execute_stage(
    kafka_bootstrap, topics, world, base_space
):
    fake = world(hooks=None, owners=(lambda operation_id: False,))
    fake.register(base_space)
    [space] = [e for e in fake.log if isinstance(e, SpaceRegistered)]
    request = OperationRequested(
        event_id="request-op-1",
        occurred_at=fake.now,
        operation_id="op-1",
        space_id=space.space_id,
        operator="pipeline",
        parameters={"seed": 5, "options": HARDWARE},  # type: ignore[arg-type]
        requested_by="alice",
    )
    async with Services(kafka_bootstrap, topics, fake) as services:
        async with running(_explorer(kafka_bootstrap, topics)):
            await services.publish(space, request)
            await services.until(lambda: bool(services.of(OperationRequested, "op-1-search")))
            services.hold = True
            await services.until(lambda: bool(fake.held))
        assert not services.of(OperationCompleted, "op-1-search"), "stopped mid-search"
        services.hold = False
        async with running(_explorer(kafka_bootstrap, topics)):
            await services.until(lambda: bool(services.of(OperationCompleted, "op-1")))
            await asyncio.sleep(0.5)
            await services.play()

    [done] = services.of(OperationCompleted, "op-1")
    assert done.stop_reason == "operator_finished", done.stop_detail
    jobs = [e.job for e in services.of(PipelineJobStarted, "op-1")]
    assert jobs == ["probe", "pruned", "narrowed", "search", "top", "longer"]
    children = [e.operation_id for e in services.of(OperationRequested) if e.operation_id != "op-1"]
    assert children == ["op-1-probe", "op-1-search", "op-1-longer"]
    measured = [
        (e.sample_store, e.entity_id, e.experiment_id) for e in services.of(MeasurementCompleted)
    ]
    assert len(measured) == len(set(measured)) == fake.actuator_calls
    [top] = [e.result for e in services.of(PipelineJobCompleted, "op-1") if e.job == "top"]
    [longer] = services.of(OperationCompleted, "op-1-longer")
    assert longer.counts.measured == len(top["entity_ids"]) == 2
