"""The explorer's rebuild at start over a long history, against a bare consumer of the same records.

Subject: the explorer app (`discospace.explorer.app.create_app`, a fresh one each round) in this
process on the real broker, through its lifespan's start-up hooks: `fold_history` runs the
runtime's `fold_then_follow` over the spaces, operations and measurements topics (fetch,
decode, `LiveExplorer.fold` of every event) up to their end offsets. Timed from the start to the
log line of the fold's report: the rebuild issue 12 asks under 20 s at 10^6 events. Also shown:
from the start until it decides (`state.live`: the broker consuming, the group joined, its
partitions caught up, `go_live`). Each round checks the fold took every event and knows every
operation as finished.
Baselines, in the same rounds, interleaved: a bare aiokafka consumer without a group reading
the same partitions from the beginning to the same end offsets with `getmany`, counting the
records; and the same plus `json.loads` of each value. The ratios show what the explorer adds.
Each timed read starts after a full garbage collection, so none pays for the heap another left.

The history: `--events` (to a few events: whole operations) of random walks, each run by the
explorer's real engine in process (`discospace.bench.harness.run_operation`: OperationRequested,
OperationStarted, SamplesRequested, SamplesDrawn, MeasurementCompleted, OperationCompleted)
over one registered space, with a MeasurementStarted before each MeasurementCompleted as a
worker sends it; walks of 50 to 400 entities, windows of 1 to 16, one seed each. Produced once,
before the rounds, with each event's key and headers as the services send them. (The
MeasurementRequested a sampler sends goes to a pool's topic, which the explorer does not read.)

Uses KAFKA_BOOTSTRAP_SERVERS when set, otherwise starts deploy/local/kafka.sh (plaintext) on a
free port. On a shared 2-core machine the figures are noisy: compare the ratios, measured in the
same run. Run: .venv/bin/python benchmarks/bench_rebuild.py [--events 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from workload import EXPERIMENT, broker, finetune_space, line

from discospace.bench.harness import Measured, run_operation, space_event
from discospace.core import (
    Entity,
    ParameterizedExperiment,
    ValidMeasurement,
)
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementStarted,
    OperationParameters,
    SpaceRegistered,
    TopicNames,
    encode,
)
from discospace.explorer.app import create_app
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime.folding import FoldReport
from discospace.runtime.publishing import event_headers
from discospace.runtime.replay import POLL_MS, existing_partitions

SPEC = finetune_space("bench-rebuild", [f"model-{i}" for i in range(100)], range(1, 1001))
WALK_SIZES = (50, 100, 200, 400)
WINDOWS = (1, 4, 8, 16)
SUBJECT = ("operation_id", "request_id", "space_id", "sample_store", "entity_id")
SUBJECT_MORE = ("entity_values", "experiment_id")


@dataclass(frozen=True)
class Produced:
    """What the history put on the broker."""

    events: int
    operations: int
    seconds: float


@dataclass(frozen=True)
class Rebuild:
    """One explorer start: seconds from the start to its fold's report, and what it holds."""

    folded_s: float
    live_s: float
    """From the start to deciding: the broker consuming, the group joined, `go_live`."""
    report: FoldReport
    operations: int
    finished: int


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rebuild-") as tmp:
        kafka = broker(Path(tmp))
        try:
            asyncio.run(_run(kafka.bootstrap_servers, arguments))
        finally:
            kafka.stop()


async def _run(bootstrap: str, arguments: argparse.Namespace) -> None:
    topics = TopicNames.unique("bench-rebuild")
    await provision(bootstrap, topics)
    produced = await produce(bootstrap, topics, history(arguments.events))
    total = produced.events
    print(
        f"{total:,} events of {produced.operations:,} operations produced in "
        f"{produced.seconds:.0f} s; {arguments.rounds} rounds"
    )
    rebuilds: list[Rebuild] = []
    bare: list[float] = []
    parsed: list[float] = []
    for round_ in range(arguments.rounds):
        gc.collect()  # each timed read starts on the same heap: not beside the last one's state
        rebuilds.append(await rebuild(bootstrap, topics))
        _check(rebuilds[-1], produced)
        gc.collect()
        bare.append(await bare_read(bootstrap, topics, lambda value: None))
        gc.collect()
        parsed.append(await bare_read(bootstrap, topics, json.loads))
        print(
            f"  round {round_ + 1}: explorer folded in {rebuilds[-1].folded_s:.2f} s "
            f"(live in {rebuilds[-1].live_s:.2f} s), bare consumer {bare[-1]:.2f} s, "
            f"with json.loads {parsed[-1]:.2f} s"
        )
    folded = [r.folded_s for r in rebuilds]
    line("explorer fold at start (s)", folded, "{:.2f}")
    line("explorer fold at start (events/s)", [total / s for s in folded], "{:,.0f}")
    line("explorer start to live, group joined (s)", [r.live_s for r in rebuilds], "{:.2f}")
    line("bare aiokafka getmany, same records (s)", bare, "{:.2f}")
    line("bare aiokafka getmany + json.loads (s)", parsed, "{:.2f}")
    line("ratio explorer fold / bare getmany", _ratios(folded, bare), "{:.1f}x")
    line("ratio explorer fold / getmany + json.loads", _ratios(folded, parsed), "{:.1f}x")


def history(total: int) -> Iterator[list[Event]]:
    """The space's registration, then whole random walks (the last ones shorter) while they
    fit in `total` events."""
    space = space_event(SPEC, [EXPERIMENT])
    yield [space]
    room = total - 1
    for number in range(total):
        # A walk of n entities is at most 4 n + 3 events (a request, a draw, a start and a
        # completion per entity; its request, start and end).
        entities = min(WALK_SIZES[number % len(WALK_SIZES)], (room - 3) // 4)
        if entities < 1:
            return
        walk = _walk(space, number, entities)
        room -= len(walk)
        yield walk


def _walk(space: SpaceRegistered, number: int, entities: int) -> list[Event]:
    """One random walk to its end, run by the explorer's engine, as its topics hold it."""
    parameters = OperationParameters(
        number_entities=entities,
        batch_size=WINDOWS[number // len(WALK_SIZES) % len(WINDOWS)],
        seed=number,
    )
    operation = f"op-{number:07d}"
    record = run_operation(space, "random_walk", parameters, _measure, operation_id=operation)
    events: list[Event] = []
    for event in record.events:
        if isinstance(event, MeasurementCompleted):
            events.append(_started(event))
        events.append(event)
    return events


def _measure(entity: Entity, experiment: ParameterizedExperiment) -> Measured:
    values = entity.as_dict()
    tokens = 1000.0 * int(values["number_gpus"]) / (1 + int(values["batch_size"]) % 7)
    memory = 500 * int(values["batch_size"])
    values_out = {"train_tokens_per_second": tokens, "peak_gpu_memory_mib": memory}
    return Measured(ValidMeasurement(values=values_out), duration_seconds=30.0)


def _started(completed: MeasurementCompleted) -> MeasurementStarted:
    """What the worker sent when it took the measurement `completed` ends."""
    subject = {name: getattr(completed, name) for name in SUBJECT + SUBJECT_MORE}
    return MeasurementStarted(
        event_id=f"{completed.event_id}-started",
        occurred_at=completed.occurred_at,
        correlation_id=completed.correlation_id,
        causation_id=completed.causation_id,
        worker_id=completed.worker_id,
        **subject,
    )


async def provision(bootstrap: str, topics: TopicNames) -> None:
    """Create every topic the explorer uses, as it does at start (before the timed starts)."""
    await create_app(_settings(bootstrap, topics)).provision_topics()


async def produce(bootstrap: str, topics: TopicNames, walks: Iterator[list[Event]]) -> Produced:
    """Publish every event of `walks` (batched: no wait per record, one flush at the end)."""
    began = time.perf_counter()
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, acks=1, max_batch_size=256 * 1024
    )
    await producer.start()
    events = operations = 0
    try:
        for walk in walks:
            operations += 1
            for event in walk:
                headers = [(k, v.encode()) for k, v in event_headers(event).items()]
                await producer.send(
                    event.topic(topics), encode(event), key=event.key(), headers=headers
                )
            events += len(walk)
        await producer.flush()
    finally:
        await producer.stop()
    on_broker = sum((await _ends(bootstrap, topics)).values())
    if on_broker != events:
        raise SystemExit(f"the topics hold {on_broker} records, not the {events} produced")
    return Produced(events, operations - 1, time.perf_counter() - began)


async def rebuild(bootstrap: str, topics: TopicNames) -> Rebuild:
    """Start a fresh explorer on `topics`: seconds to its fold's report, and to live."""
    service = create_app(_settings(bootstrap, topics))
    reports = _FoldReports()
    logging.getLogger("discospace.explorer").addHandler(reports)
    logging.getLogger("discospace.explorer").setLevel(logging.INFO)
    try:
        began = time.perf_counter()
        async with service.app.start_lifespan_context():
            await _until(lambda: service.state.state.live, "the explorer to go live")
            live = time.perf_counter() - began
            operations = service.state.state.operations.values()
            finished = sum(1 for operation in operations if operation.finished is not None)
            count = len(service.state.state.operations)
    finally:
        logging.getLogger("discospace.explorer").removeHandler(reports)
    if reports.report is None:
        raise SystemExit("the explorer started without logging its fold's report")
    return Rebuild(reports.at - began, live, reports.report, count, finished)


async def _until(done: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.perf_counter() + timeout_s
    while not done():
        if time.perf_counter() > deadline:
            raise SystemExit(f"waited {timeout_s:.0f} s for {what}")
        await asyncio.sleep(0.005)


class _FoldReports(logging.Handler):
    """Notes when the explorer logs its start-up fold's report, and the report."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.report: FoldReport | None = None
        self.at = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        arguments = record.args if isinstance(record.args, tuple) else ()
        if len(arguments) == 1 and isinstance(arguments[0], FoldReport):
            self.at, self.report = time.perf_counter(), arguments[0]


def _check(run: Rebuild, produced: Produced) -> None:
    report = run.report
    if (report.folded, report.unreadable, report.failed) != (produced.events, 0, 0):
        raise SystemExit(f"the explorer {report}, of {produced.events} events produced")
    if (run.operations, run.finished) != (produced.operations, produced.operations):
        raise SystemExit(
            f"the explorer knows {run.operations} operations ({run.finished} finished), "
            f"not the {produced.operations} finished operations produced"
        )


async def bare_read(bootstrap: str, topics: TopicNames, parse: Callable[[bytes], object]) -> float:
    """Seconds a consumer without a group takes to read the explorer's partitions from the
    beginning to their end offsets (as the fold notes them), `parse`-ing each value."""
    began = time.perf_counter()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    try:
        ends = await consumer.end_offsets(await _partitions(bootstrap, topics))
        consumer.assign(list(ends))
        await consumer.seek_to_beginning(*ends)
        pending = {tp for tp, end in ends.items() if end > 0}
        read = 0
        while pending:
            batches = await consumer.getmany(*pending, timeout_ms=POLL_MS)
            for partition, records in batches.items():
                for record in records:
                    parse(record.value or b"")
                read += len(records)
                if records and records[-1].offset + 1 >= ends[partition]:
                    pending.discard(partition)
    finally:
        await consumer.stop()
    if read != sum(ends.values()):
        raise SystemExit(f"the bare consumer read {read} records, not {sum(ends.values())}")
    return time.perf_counter() - began


async def _ends(bootstrap: str, topics: TopicNames) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        return await consumer.end_offsets(await _partitions(bootstrap, topics))
    finally:
        await consumer.stop()


async def _partitions(bootstrap: str, topics: TopicNames) -> list[TopicPartition]:
    """Every partition of the three topics the explorer folds at start."""
    names = (topics.spaces, topics.operations, topics.measurements)
    return await existing_partitions(bootstrap, names)


def _settings(bootstrap: str, topics: TopicNames) -> ExplorerSettings:
    return ExplorerSettings(
        kafka_bootstrap_servers=bootstrap,
        topic_prefix=topics.prefix,
        group_id=f"bench-rebuild-{uuid.uuid4().hex[:8]}",
    )


def _ratios(subject: list[float], baseline: list[float]) -> list[float]:
    return [s / b for s, b in zip(subject, baseline, strict=True)]


if __name__ == "__main__":
    main()
