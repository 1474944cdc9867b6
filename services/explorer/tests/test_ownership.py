"""The partitions a replica is given: it decides for their operations only once it has folded
the log up to where it ended when it got them, and stops before the partitions move on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from aiokafka.partitioner import DefaultPartitioner
from prometheus_client import CollectorRegistry

from discospace.events import Event, OperationStarted, SamplesRequested
from discospace.events.topics import operation_key
from discospace.explorer.domain.decide import Engine, Timing
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.explorer.service import ownership
from discospace.explorer.service.live import LiveExplorer
from discospace.explorer.service.metrics import ExplorerMetrics
from discospace.explorer.service.ownership import Ownership
from discospace.explorer.service.placement import owner_of, partition_of, spread_ids
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime.positions import ReadPositions

PARTITIONS = 3


class Broker:
    """A fake publisher; while `held` is set, publishing waits for it to be cleared."""

    def __init__(self) -> None:
        self.published: list[Event] = []
        self.held: asyncio.Event | None = None

    async def __call__(self, event: Event) -> None:
        if self.held is not None:
            await self.held.wait()
        self.published.append(event)


def _now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def parts():
    """A live explorer that owns nothing yet, its publisher, positions and ownership."""
    broker = Broker()
    engine = Engine(OperatorRegistry([RandomWalk()]), Timing(1.0, 8.0, 30.0))
    metrics = ExplorerMetrics.create(CollectorRegistry())
    explorer = LiveExplorer(engine, broker, _now, metrics, 0.01)
    positions = ReadPositions()
    settings = ExplorerSettings(topic_prefix="own")
    return explorer, broker, positions, Ownership(settings, explorer, positions, metrics), metrics


def _ends(monkeypatch, ends: dict[tuple[str, int], int]) -> None:
    async def end_offsets(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], int]:
        return ends

    monkeypatch.setattr(ownership, "end_offsets", end_offsets)


def test_the_partition_of_an_operation_is_the_one_the_producer_picks():
    pick = DefaultPartitioner()
    for count in (1, 3, 7):
        every = list(range(count))
        for number in range(300):
            operation_id = f"op-{number:x}-{number * 7919}"
            expected = pick(operation_key(operation_id), every, every)
            assert partition_of(operation_id, count) == expected


def test_spread_ids_put_as_many_distinct_operations_in_every_partition():
    ids = spread_ids("t", 2, 3)

    assert ids == sorted(set(ids))
    assert all(i.startswith("op-t-") for i in ids)
    assert sorted(partition_of(i, 3) for i in ids) == [0, 0, 1, 1, 2, 2]


def test_an_owner_of_partitions_names_exactly_their_operations():
    ids = [f"op-{n}" for n in range(60)]
    owns = owner_of({0, 2}, PARTITIONS)
    assert {i for i in ids if owns(i)} == {i for i in ids if partition_of(i, 3) in {0, 2}}


async def test_given_partitions_are_decided_for_once_the_log_is_folded_up_to_their_end(
    parts, monkeypatch, small_space, make_request
):
    explorer, broker, positions, owner, metrics = parts
    operation_id = next(f"op-{n}" for n in range(99) if partition_of(f"op-{n}", 3) == 1)
    _ends(monkeypatch, {("own.operations", 1): 2, ("own.spaces", 0): 1})
    await explorer.handle(small_space)
    await explorer.handle(make_request(small_space, operation_id, batch_size=2))

    taking = asyncio.create_task(owner._take_over(frozenset({1}), PARTITIONS, 0))
    positions.saw("own.spaces", 0, 0)
    await asyncio.sleep(0.05)
    assert not taking.done()
    assert broker.published == []
    positions.saw("own.operations", 1, 1)
    await asyncio.wait_for(taking, 1)
    await explorer.stop()

    assert [type(e) for e in broker.published] == [OperationStarted, SamplesRequested]
    assert owner.owned == {1}
    labels = {"partition": "1"}
    assert metrics.owned_partitions.labels(**labels)._value.get() == 1.0


async def test_partitions_taken_away_while_catching_up_are_never_decided_for(
    parts, monkeypatch, small_space, make_request
):
    explorer, broker, positions, owner, _ = parts
    _ends(monkeypatch, {("own.operations", 0): 5})
    await explorer.handle(small_space)
    await explorer.handle(make_request(small_space, batch_size=2))

    taking = asyncio.create_task(owner._take_over(frozenset({0, 1, 2}), PARTITIONS, 0))
    await asyncio.sleep(0.05)
    await owner.on_partitions_revoked(set())
    positions.saw("own.operations", 0, 4)
    await asyncio.wait_for(taking, 1)
    await explorer.stop()

    assert broker.published == []
    assert owner.owned == frozenset()


async def test_partitions_are_given_up_only_once_the_decision_being_published_is_out(
    parts, small_space, make_request
):
    explorer, broker, _, owner, _ = parts
    await explorer.go_live()
    await explorer.handle(small_space)
    broker.held = asyncio.Event()
    deciding = asyncio.create_task(explorer.handle(make_request(small_space, batch_size=2)))
    await asyncio.sleep(0.05)

    revoking = asyncio.create_task(owner.on_partitions_revoked(set()))
    await asyncio.sleep(0.05)
    assert not revoking.done()
    broker.held.set()
    await asyncio.wait_for(asyncio.gather(deciding, revoking), 1)
    await explorer.handle(make_request(small_space, "op-2", batch_size=2))
    await explorer.stop()

    assert [type(e) for e in broker.published] == [OperationStarted, SamplesRequested]
    assert {e.operation_id for e in broker.published} == {"op-1"}
