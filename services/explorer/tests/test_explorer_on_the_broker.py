"""The explorer on the real broker: the test plays the sampler and the actuators over Kafka."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.events import (
    Event,
    OperationCompleted,
    OperationStarted,
    SamplesRequested,
    TopicNames,
    decode,
    encode,
)
from discospace.explorer.app import create_app
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime import Service
from discospace.testing.kafka import create_topics, delete_topics

pytestmark = pytest.mark.integration
TIMEOUT_S = 60.0


def _now() -> datetime:
    return datetime.now(UTC)


class Player:
    """Publishes what the sampler and the actuators would, and reads the operations topic."""

    def __init__(self, bootstrap: str, topics: TopicNames, fakes) -> None:
        self.bootstrap, self.topics, self.fakes = bootstrap, topics, fakes
        self.operations: list[Event] = []
        self.answered: set[str] = set()

    async def __aenter__(self) -> Player:
        self.producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap)
        self.consumer = AIOKafkaConsumer(
            self.topics.operations, bootstrap_servers=self.bootstrap, auto_offset_reset="earliest"
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

    async def read(self) -> None:
        batch = await self.consumer.getmany(timeout_ms=100)
        self.operations += [decode(r.value) for part in batch.values() for r in part]

    def requests(self) -> list[SamplesRequested]:
        return [e for e in self.operations if isinstance(e, SamplesRequested)]

    def completed(self) -> list[OperationCompleted]:
        return [e for e in self.operations if isinstance(e, OperationCompleted)]

    async def wait_for(self, check, timeout_s: float = TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            assert time.monotonic() < deadline, f"not true after {timeout_s}s: {self.operations}"
            await self.read()

    async def answer_new_requests(self, measure: bool = True) -> list:
        """Answer every request not answered yet: draw it, and measure what it drew (or
        return those measurements, still to be made)."""
        unmeasured = []
        for request in [r for r in self.requests() if r.event_id not in self.answered]:
            self.answered.add(request.event_id)
            drawn, pending = self.fakes.draw(request, _now())
            await self.publish(drawn)
            if measure:
                await self.publish(*(self.fakes.measure(p, _now()) for p in pending))
            else:
                unmeasured += pending
        return unmeasured

    async def play_until_completed(self) -> OperationCompleted:
        deadline = time.monotonic() + TIMEOUT_S
        while not self.completed():
            assert time.monotonic() < deadline, f"no completion: {self.operations}"
            await self.read()
            await self.answer_new_requests()
        return self.completed()[0]


@asynccontextmanager
async def running(service: Service) -> AsyncIterator[Service]:
    async with service.app.start_lifespan_context():
        yield service


@pytest.fixture
async def topics(kafka_bootstrap: str) -> AsyncIterator[TopicNames]:
    names = TopicNames.unique("explorer")
    fixed = {names.spaces: 1, names.operations: 3, names.measurements: 3, names.dead_letter: 1}
    await create_topics(kafka_bootstrap, fixed)
    yield names
    await delete_topics(kafka_bootstrap, list(fixed))


def _explorer(kafka_bootstrap: str, topics: TopicNames) -> Service:
    settings = ExplorerSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        measurement_retry_backoff_s=0.2,
        http_port=0,
    )
    return create_app(settings)


def _check_decisions(events: list[Event], size: int = 8) -> None:
    """No decision twice, none missing: one start, request indices 0..n-1, ids unique, and the
    draws cover each position of the sequence exactly once."""
    requests = [e for e in events if isinstance(e, SamplesRequested)]
    assert len([e for e in events if isinstance(e, OperationStarted)]) == 1
    assert sorted(r.request_index for r in requests) == list(range(len(requests)))
    assert len({r.event_id for r in requests}) == len(requests)
    draws = [r for r in requests if r.count is not None]
    positions = sorted(p for r in draws for p in range(r.position, r.position + (r.count or 0)))
    assert positions == list(range(size))
    assert len([e for e in events if isinstance(e, OperationCompleted)]) == 1


def _flaky_and_one_invalid(values, experiment, attempt):
    if values["batch_size"] == 2 and attempt == 1:
        return ("fail", True)
    if values == {"batch_size": 8, "number_gpus": 2}:
        return ("invalid", "CUDA out of memory")
    return ("valid", {"tps": float(values["batch_size"] * values["number_gpus"]), "mem": 1})


async def test_the_explorer_runs_a_random_walk_with_retries_to_completion_over_kafka(
    kafka_bootstrap, topics, small_space, make_request, make_fakes
):
    fakes = make_fakes(small_space, _flaky_and_one_invalid)
    request = make_request(small_space, batch_size=3, seed=4, max_retries=2)
    async with (
        running(_explorer(kafka_bootstrap, topics)),
        Player(kafka_bootstrap, topics, fakes) as player,
    ):
        await player.publish(small_space, request)
        completed = await player.play_until_completed()
        await asyncio.sleep(0.5)
        await player.read()

    assert completed.stop_reason == "space_exhausted"
    assert completed.counts.model_dump() == {
        "requested": 8,
        "measured": 8,
        "reused": 0,
        "failed": 0,
        "invalid": 1,
    }
    retries = [r for r in player.requests() if r.attempt == 2]
    # in the order their failures arrived: either, on a loaded machine
    assert sorted((r.points for r in retries), key=str) == [
        ({"batch_size": 2, "number_gpus": 1},),
        ({"batch_size": 2, "number_gpus": 2},),
    ]
    _check_decisions(player.operations)


async def test_a_restarted_explorer_neither_repeats_nor_loses_a_decision(
    kafka_bootstrap, topics, small_space, make_request, make_fakes
):
    fakes = make_fakes(small_space)
    request = make_request(small_space, batch_size=2, seed=4)
    async with Player(kafka_bootstrap, topics, fakes) as player:
        async with running(_explorer(kafka_bootstrap, topics)):
            await player.publish(small_space, request)
            await player.wait_for(lambda: len(player.requests()) == 1)
            [first] = player.requests()
            drawn, pending = fakes.draw(first, _now())
            player.answered.add(first.event_id)
            await player.publish(drawn, fakes.measure(pending[0], _now()))
            await player.wait_for(lambda: len(player.requests()) == 2)

        await player.publish(fakes.measure(pending[1], _now()))
        in_flight = await player.answer_new_requests(measure=False)

        async with running(_explorer(kafka_bootstrap, topics)):
            await player.wait_for(lambda: len(player.requests()) == 3)
            refill = player.requests()[2]
            assert (refill.request_index, refill.position, refill.count) == (2, 3, 1)
            await player.publish(*(fakes.measure(p, _now()) for p in in_flight))
            completed = await player.play_until_completed()
            await asyncio.sleep(0.5)
            await player.read()

    _check_decisions(player.operations)
    assert completed.counts.measured == 8
