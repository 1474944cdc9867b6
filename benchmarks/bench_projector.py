"""The projector service end to end against a raw insert of the same rows, in one run.

Subject: the projector app (its batch subscription, decode, fold, buffer, store writes) in this
process on the real broker and embedded chDB, with the garbage collector set as `serve` sets it
for a service process (`runtime.collector`; `--python-gc` keeps Python's own thresholds), a
fresh store and consumer group each round, timed from the moment its consumer has its
partitions to the moment the store has recorded every event as written (rows and offsets),
which is when the views read them; a view then checks they are there (not timed).
Baseline: a raw clickhouse-connect insert into chDB of the identical rows (projection tables,
raw events, offsets), prepared beforehand, in batches of the projector's `batch_max_events`,
one insert per table per batch naming the columns and their types (as the projector does), into
a fresh database of the same data dir.

The events are a random walk's measurements (requested on a pool's topic, started and
completed on the measurements topic), produced once before the rounds. Rounds alternate subject
and baseline; figures are min / median / max of the rounds. On a shared 2-core machine they are
noisy: compare the ratio, measured in the same run.

Uses KAFKA_BOOTSTRAP_SERVERS when set, otherwise starts deploy/local/kafka.sh on a free port.
Run: .venv/bin/python benchmarks/bench_projector.py [--events 60000] [--rounds 3] [--python-gc]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from workload import T0, broker, finetune_space, line, registered, walk_started

from discospace.core import DiscoverySpace
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementRequested,
    MeasurementStarted,
    OperationStarted,
    TopicNames,
    encode,
    measurement_request_id,
)
from discospace.projector.app import create_app
from discospace.projector.fold import rows_of
from discospace.projector.settings import ProjectorSettings
from discospace.runtime.collector import tune_collector
from discospace.store.client import StoreSettings, connect
from discospace.store.events import EventRecord, next_offsets
from discospace.store.migrations import migrate
from discospace.store.schema import Table
from discospace.store.tables import CONSUMER_OFFSETS, EVENTS
from discospace.testing.kafka import (
    create_topics,
)

POOL = "a100"
PARTITIONS = 4
SPEC = finetune_space("bench-projector", [f"model-{i}" for i in range(100)], range(1, 1001))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--python-gc",
        action="store_true",
        help="leave the garbage collector at Python's thresholds (a service process does not)",
    )
    arguments = parser.parse_args()
    if not arguments.python_gc:
        tune_collector(ProjectorSettings().gc_young_threshold)
    with tempfile.TemporaryDirectory(prefix="bench-projector-") as tmp:
        kafka = broker(Path(tmp))
        try:
            asyncio.run(_run(kafka.bootstrap_servers, Path(tmp), arguments))
        finally:
            kafka.stop()


async def _run(bootstrap: str, workdir: Path, arguments: argparse.Namespace) -> None:
    topics = TopicNames.unique("bench-projector")
    events = history(arguments.events)
    read = await _produce(bootstrap, topics, events)
    batch = ProjectorSettings().batch_max_events
    print(f"{len(events):,} events on the broker; {arguments.rounds} rounds; chDB at {workdir}")
    subject, baseline = [], []
    for round_ in range(arguments.rounds):
        subject.append(await _project(bootstrap, topics, workdir, f"p{round_}", len(events)))
        baseline.append(_raw_insert(workdir, f"raw{round_}", read, batch))
        print(
            f"  round {round_ + 1}: projector {subject[-1]:,.0f} events/s, "
            f"raw insert {baseline[-1]:,.0f} events/s"
        )
    ratios = [s / b for s, b in zip(subject, baseline, strict=True)]
    line("projector service, topic to views (events/s)", subject, "{:,.0f}")
    line("raw clickhouse-connect insert, same rows (events/s)", baseline, "{:,.0f}")
    line("ratio projector / raw insert", ratios, "{:.2f}x")


def history(total: int) -> list[Event]:
    """A registered space, an operation, then requested/started/completed per entity."""
    space_id = DiscoverySpace.from_spec(SPEC).id
    started = walk_started(space_id)
    events: list[Event] = [registered(SPEC, space_id), started]
    entities = DiscoverySpace.from_spec(SPEC).entity_space.sequential()
    for index, entity in enumerate(entities):
        if len(events) >= total:
            break
        events += _measured(started, space_id, entity.id, entity.as_dict(), index)
    return events[:total]


def _measured(
    started: OperationStarted, space_id: str, entity_id: str, values: dict[str, Any], index: int
) -> list[Event]:
    subject = {
        "operation_id": "op-bench",
        "request_id": measurement_request_id("op-bench", entity_id, "finetune"),
        "space_id": space_id,
        "sample_store": SPEC.sample_store,
        "entity_id": entity_id,
        "entity_values": values,
        "experiment_id": "finetune",
    }
    at = T0 + timedelta(milliseconds=index)
    requested = MeasurementRequested.caused_by(
        started, at, index, **subject, experiment=SPEC.measurement_space[0], pool=POOL
    )
    running = MeasurementStarted.caused_by(requested, at, **subject, worker_id="w0")
    completed = MeasurementCompleted.caused_by(
        running,
        at,
        **subject,
        worker_id="w0",
        values={"train_tokens_per_second": 100.0 + index, "peak_gpu_memory_mib": 1000},
        is_valid=True,
        uncertainty={},
        duration_seconds=1.0,
    )
    return [requested, running, completed]


async def _produce(bootstrap: str, topics: TopicNames, events: list[Event]) -> list[Any]:
    """Publish `events`; return each with where it landed (topic, partition, offset)."""
    names = {event.topic(topics) for event in events}
    await create_topics(bootstrap, dict.fromkeys(names, PARTITIONS))
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks=1)
    await producer.start()
    try:
        sent = [
            await producer.send(event.topic(topics), encode(event), key=event.key())
            for event in events
        ]
        landed = await asyncio.gather(*sent)
    finally:
        await producer.stop()
    return list(zip(events, landed, strict=True))


async def _project(
    bootstrap: str, topics: TopicNames, workdir: Path, database: str, total: int
) -> float:
    """Events per second the projector writes, from partitions assigned to all written."""
    settings = ProjectorSettings(
        kafka_bootstrap_servers=bootstrap,
        topic_prefix=topics.prefix,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
    )
    store = StoreSettings(url=None, data_dir=workdir / "chdb", database=database)
    service = create_app(settings, store=store)
    async with service.app.start_lifespan_context():
        [subscriber] = list(service.broker.subscribers)
        while not (subscriber.consumer and subscriber.consumer.assignment()):  # type: ignore[attr-defined]
            await asyncio.sleep(0.005)
        began = time.perf_counter()
        while sum(service.state.positions().values()) < total:
            await asyncio.sleep(0.005)
        seconds = time.perf_counter() - began
        writes = service.metrics.registry.get_sample_value(
            "discospace_projection_write_seconds_count"
        )
        writing = service.metrics.registry.get_sample_value(
            "discospace_projection_write_seconds_sum"
        )
        print(f"    projector: {writes:.0f} writes took {writing:.2f} s of {seconds:.2f} s")
        progress = await service.state.read(lambda views: views.operation("op-bench"))
    expected = (total - 2) // 3 + (1 if (total - 2) % 3 else 0)
    if progress.counts.requested != expected:
        raise SystemExit(f"the view shows {progress.counts.requested} requests, not {expected}")
    return total / seconds


def _raw_insert(workdir: Path, database: str, read: list[Any], batch: int) -> float:
    """Events per second of a raw insert of the projector's rows, prepared beforehand."""
    client = connect(StoreSettings(url=None, data_dir=workdir / "chdb", database=database))
    try:
        migrate(client)
        prepared = list(_prepared(read, batch))
        began = time.perf_counter()
        for tables in prepared:
            for table, rows in tables.items():
                table.insert(client, rows)
        return len(read) / (time.perf_counter() - began)
    finally:
        client.close()


def _prepared(read: list[Any], batch: int) -> Iterator[dict[Table, list[Any]]]:
    """Per batch, the rows of every table the projector writes, in its column order."""
    for start in range(0, len(read), batch):
        chunk = read[start : start + batch]
        tables: dict[Table, list[Any]] = defaultdict(list)
        records = []
        for event, at in chunk:
            for row in rows_of(event):
                tables[row.table].append(row.ordered())
            records.append(
                EventRecord.of(
                    event, topic=at.topic, partition=at.partition, offset=at.offset, key=event.key()
                )
            )
        tables[EVENTS] = [record.row() for record in records]
        now = datetime.now(UTC)
        offsets = [
            CONSUMER_OFFSETS.row(
                consumer="raw", topic=topic, partition=partition, offset=offset, updated_at=now
            ).ordered()
            for (topic, partition), offset in next_offsets(records).items()
        ]
        tables[CONSUMER_OFFSETS] = offsets
        yield dict(tables)


if __name__ == "__main__":
    main()
