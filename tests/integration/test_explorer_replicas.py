"""Two explorer replicas on one deployment: they share the operations, never decide twice.

Registry, sampler, projector, a synthetic actuator worker and two explorers run as processes
on the real broker (3 partitions per topic). Operations are requested with ids chosen so every
partition of the operations topic holds two of them; each replica decides for the operations
of the partitions the group `<prefix>.explorer` gives it. Then one replica is killed mid-operation:
the other takes its partitions over once the group's session timeout has passed and finishes
every operation, with no request index decided twice.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from discospace.events import (
    Event,
    MeasurementCompleted,
    OperationCompleted,
    OperationFailed,
    OperationParameters,
    OperationRequested,
    OperationStarted,
    SamplesRequested,
    decode,
    encode,
    new_event,
)
from discospace.explorer.service.placement import partition_of, spread_ids
from discospace.testing.loop import Loop, ServiceProcess

pytestmark = pytest.mark.integration

PARTITIONS = 3
POOL = "replicas"
SESSION_TIMEOUT_S = 6  # the broker's smallest by default (group.min.session.timeout.ms)
ACTUATOR = {"experiments": [{"experiment": "benchmark"}], "latency_s": 0.1, "invalid_when": None}
ENTITY_SPACE = [
    {"name": "number_gpus", "values": [2, 4]},
    {"name": "model_max_length", "values": [512, 1024, 2048, 4096, 8192]},
    {"name": "batch_size", "values": [1, 2, 4, 8, 16, 32, 64, 128]},
]
REPLICAS = ("explorer-a", "explorer-b")
DECISION_TYPES = (OperationStarted, SamplesRequested, OperationCompleted, OperationFailed)


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("replicas"))
    try:
        for name in ("registry", "sampler", "projector"):
            running.start(name)
        running.actuator("actuator", POOL, ACTUATOR, DISCOSPACE_ACTUATOR_CONCURRENCY="3")
        for name in REPLICAS:
            running.start(
                name, "explorer", DISCOSPACE_EXPLORER_SESSION_TIMEOUT_S=str(SESSION_TIMEOUT_S)
            )
        running.wait_healthy()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def space_id(loop: Loop) -> str:
    path = loop.workdir / "space.yaml"
    spec = {
        "sample_store": "store-replicas",
        "entity_space": ENTITY_SPACE,
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }
    path.write_text(yaml.safe_dump(spec))
    return register(loop, path)


def register(loop: Loop, path: Path, timeout_s: float = 60) -> str:
    """The space id, once the registry knows the actuator's catalog and accepts the space."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = loop.cli("space", "create", "-f", str(path))
        if answer.returncode == 0:
            return answer.stdout.strip()
        if time.monotonic() > deadline:
            raise AssertionError(answer.stderr + loop.logs())
        time.sleep(0.5)


async def request_walks(loop: Loop, space_id: str, ids: list[str], entities: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=loop.bootstrap)
    await producer.start()
    try:
        for seed, operation_id in enumerate(ids):
            parameters = OperationParameters(
                number_entities=entities, batch_size=2, seed=seed, single_measurement=False
            )
            request = new_event(
                OperationRequested,
                operation_id=operation_id,
                space_id=space_id,
                operator="random_walk",
                parameters=parameters,
                requested_by="tester",
            )
            await producer.send_and_wait(loop.topics.operations, encode(request), key=request.key())
    finally:
        await producer.stop()


@dataclass(frozen=True)
class Logged:
    """One event as the broker holds it."""

    topic: str
    partition: int
    timestamp_ms: int
    event: Event


class Log:
    """The operations and measurements topics, read as they grow."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        self.records: list[Logged] = []

    async def read_until(self, done: Callable[[Log], bool], timeout_s: float = 90) -> None:
        topics = (self.loop.topics.operations, self.loop.topics.measurements)
        consumer = AIOKafkaConsumer(
            *topics, bootstrap_servers=self.loop.bootstrap, auto_offset_reset="earliest"
        )
        self.records = []
        deadline = time.monotonic() + timeout_s
        try:
            await consumer.start()
            while not done(self):
                if time.monotonic() > deadline:
                    raise AssertionError(f"not done after {timeout_s}s: {self.loop.logs()}")
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    self.records += [
                        Logged(r.topic, r.partition, r.timestamp, decode(r.value)) for r in records
                    ]
        finally:
            await consumer.stop()

    def of(self, ids: list[str]) -> list[Logged]:
        return [r for r in self.records if getattr(r.event, "operation_id", None) in ids]

    def events(
        self, operation_id: str, kind: type[Event] | tuple[type[Event], ...]
    ) -> list[Logged]:
        return [r for r in self.of([operation_id]) if isinstance(r.event, kind)]

    def ended(self, ids: list[str]) -> bool:
        return all(self.events(i, (OperationCompleted, OperationFailed)) for i in ids)

    def measured(self, ids: list[str], at_least: int) -> bool:
        return all(len(self.events(i, MeasurementCompleted)) >= at_least for i in ids)


def owned(explorer: ServiceProcess) -> set[int]:
    return {p for p in range(PARTITIONS) if explorer.metric(OWNED, {"partition": str(p)}) == 1.0}


OWNED = "discospace_explorer_owned_partitions"
DECISIONS = "discospace_explorer_decisions_total"
CONFLICTS = "discospace_explorer_conflicting_decisions_total"


def wait_for_shares(loop: Loop, timeout_s: float = 60) -> dict[str, set[int]]:
    """The partitions each replica decides for, once they share all of them."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shares = {name: owned(loop.services[name]) for name in REPLICAS}
        parts = list(shares.values())
        if all(parts) and not set.intersection(*parts) and set.union(*parts) == {0, 1, 2}:
            return shares
        time.sleep(0.2)
    raise AssertionError(f"the replicas never shared the partitions: {loop.logs()}")


def check_every_operation(log: Log, ids: list[str], entities: int) -> None:
    """Completed with `entities` distinct entities measured; each request index decided once;
    every event of an operation in the partition `partition_of` gives."""
    for operation_id in ids:
        [completed] = [r.event for r in log.events(operation_id, OperationCompleted)]
        assert isinstance(completed, OperationCompleted)
        assert completed.stop_reason == "requested_entities_measured", completed
        measured = {r.event.entity_id for r in log.events(operation_id, MeasurementCompleted)}
        assert len(measured) == entities == completed.counts.measured
        indices = Counter(r.event.request_index for r in log.events(operation_id, SamplesRequested))
        assert sorted(indices) == list(range(len(indices)))
        assert set(indices.values()) == {1}, f"{operation_id}: an index decided twice: {indices}"
        placed = {r.partition for r in log.of([operation_id])}
        assert placed == {partition_of(operation_id, PARTITIONS)}


async def test_two_replicas_share_the_operations_and_each_decides_only_for_its_own(
    loop: Loop, space_id: str
):
    shares = wait_for_shares(loop)
    before = {name: loop.services[name].metric(DECISIONS) for name in REPLICAS}
    ids = spread_ids("shared", 2, PARTITIONS)
    await request_walks(loop, space_id, ids, entities=8)
    log = Log(loop)
    await log.read_until(lambda log: log.ended(ids))

    check_every_operation(log, ids, entities=8)
    for name, partitions in shares.items():
        mine = [i for i in ids if partition_of(i, PARTITIONS) in partitions]
        decided = len([r for r in log.of(mine) if isinstance(r.event, DECISION_TYPES)])
        explorer = loop.services[name]
        assert explorer.metric(DECISIONS) - before[name] == decided > 0
        assert explorer.metric(CONFLICTS) == 0


async def test_a_killed_replicas_operations_are_taken_over_and_finished_without_repeats(
    loop: Loop, space_id: str
):
    shares = wait_for_shares(loop)
    victim, survivor = sorted(REPLICAS, key=lambda name: -len(shares[name]))
    ids = spread_ids("killed", 2, PARTITIONS)
    theirs = [i for i in ids if partition_of(i, PARTITIONS) in shares[victim]]
    await request_walks(loop, space_id, ids, entities=16)
    log = Log(loop)
    await log.read_until(lambda log: log.measured(ids, at_least=2))
    assert not any(log.events(i, OperationCompleted) for i in theirs), "ended before the kill"

    loop.kill(victim)
    killed_at_ms = time.time() * 1000
    await log.read_until(lambda log: log.ended(ids))

    check_every_operation(log, ids, entities=16)
    finished_by_survivor = [
        i for i in theirs if log.events(i, OperationCompleted)[0].timestamp_ms > killed_at_ms
    ]
    assert finished_by_survivor, "no operation of the killed replica was finished after it died"
    assert owned(loop.services[survivor]) == {0, 1, 2}
    assert loop.services[survivor].metric(CONFLICTS) == 0
