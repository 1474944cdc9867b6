"""CPU per message of a service's consumer against a bare aiokafka consumer doing the same
reading, on the same broker, in one process, in interleaved rounds.

The discovery loop's services each handle about four events per measurement, and the loop's
CPU per measurement (`bench_loop.py`) is mostly their per-message cost: this isolates it.
Subjects, each reading a backlog of `--messages` events on a fresh one-partition topic:
- handled: a consumer group of a service (`discospace.runtime`: FastStream's per-message
  pipeline, the dead-letter middleware, the duplicate check, offsets committed in the
  background) whose handler takes every event and does nothing with it;
- ignored: the same consumer on events of a type none of its handlers takes (what the actuator
  sees of the operations topic, or the sampler of the samples it drew itself);
- baseline: a bare aiokafka consumer in a group: `getmany`, every record decoded to its event
  (`discospace.events.decode`, as a service must), one commit per batch.

CPU is this process's user + system time from the first event of the backlog to the last
(an event the handler takes marks both ends for `ignored`), divided by the events between; the
broker's CPU is not counted. Figures are min / median / max of the rounds, and the ratio of
each subject to the baseline of the same round. The garbage collector is set as `serve` sets it
for a service process.

Uses KAFKA_BOOTSTRAP_SERVERS when set, otherwise starts deploy/local/kafka.sh on a free port.
Run: .venv/bin/python benchmarks/bench_consumer.py [--messages 5000] [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from rich.console import Console
from rich.table import Table
from workload import broker

from discospace.events import (
    ActuatorRegistered,
    OperationCancelRequested,
    TopicNames,
    decode,
    encode,
    new_event,
)
from discospace.runtime import ServiceSettings, create_service
from discospace.runtime.collector import tune_collector
from discospace.testing.kafka import create_topics
from discospace.testing.loop import REPO

SUBJECTS = ("handled", "ignored")
STALL_S = 120.0
"""No progress for this long: the run fails rather than hangs."""


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def taken(number: int) -> bytes:
    """An event the subjects' handler takes (distinct ids: none is dropped as a duplicate)."""
    event = new_event(
        ActuatorRegistered, actuator="bench", pool="p", experiments=(), worker_id=f"w{number}"
    )
    return encode(event)


def not_taken(number: int) -> bytes:
    """An event of a type the subjects' handler does not take."""
    event = new_event(OperationCancelRequested, operation_id=f"op-{number}", requested_by="bench")
    return encode(event)


async def fill(bootstrap: str, topic: str, values: list[bytes]) -> None:
    await create_topics(bootstrap, {topic: 1})
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        sent = [await producer.send(topic, value) for value in values]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


class Marks:
    """CPU seconds at the first and the last event a handler takes."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.first = self.last = 0.0
        self.done = asyncio.Event()

    def seen(self) -> None:
        now = cpu_seconds()
        self.count += 1
        if self.count == 1:
            self.first = now
        if self.count == self.expected:
            self.last = now
            self.done.set()


async def subject(bootstrap: str, mode: str, messages: int) -> float:
    """Microseconds of CPU per message for a service consumer reading `messages` events."""
    topics = TopicNames.unique(f"bench-consumer-{mode}")
    if mode == "handled":
        values = [taken(i) for i in range(messages + 1)]
        marks = Marks(messages + 1)
    else:
        values = [taken(0), *(not_taken(i) for i in range(messages - 1)), taken(1)]
        marks = Marks(2)
    await fill(bootstrap, topics.actuators, values)
    settings = ServiceSettings(kafka_bootstrap_servers=bootstrap, topic_prefix=topics.prefix)
    service = create_service(settings, description="The consumer benchmark's subject.")

    @service.consumer(topics.actuators)
    async def on_announced(event: ActuatorRegistered) -> None:
        marks.seen()

    async with service.app.start_lifespan_context():
        await asyncio.wait_for(marks.done.wait(), STALL_S)
    return 1e6 * (marks.last - marks.first) / messages


async def baseline(bootstrap: str, messages: int) -> float:
    """Microseconds of CPU per message for a bare aiokafka consumer (getmany, decode each,
    one commit per batch) reading `messages` events."""
    topics = TopicNames.unique("bench-consumer-bare")
    await fill(bootstrap, topics.actuators, [taken(i) for i in range(messages + 1)])
    consumer = AIOKafkaConsumer(
        topics.actuators,
        bootstrap_servers=bootstrap,
        group_id=f"{topics.prefix}.bare",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    count, first, last = 0, 0.0, 0.0
    try:
        while count < messages + 1:
            batch = await consumer.getmany(timeout_ms=int(STALL_S * 1000))
            if not batch:
                raise SystemExit(f"the bare consumer read nothing for {STALL_S:.0f} s")
            for record in (r for records in batch.values() for r in records):
                decode(record.value)
                count += 1
                if count == 1:
                    first = cpu_seconds()
                if count == messages + 1:  # as the subject's mark: at the last event's handling
                    last = cpu_seconds()
            await consumer.commit()
    finally:
        await consumer.stop()
    return 1e6 * (last - first) / messages


def spread(values: list[float]) -> str:
    return " / ".join(f"{v:,.1f}" for v in (min(values), statistics.median(values), max(values)))


def ratios(subject_values: list[float], base_values: list[float]) -> list[float]:
    return [s / b for s, b in zip(subject_values, base_values, strict=True)]


async def run(bootstrap: str, messages: int, rounds: int, say: Callable[[str], None]) -> dict:
    figures: dict[str, list[float]] = {"baseline": [], **{mode: [] for mode in SUBJECTS}}
    for number in range(rounds):
        say(f"round {number + 1} of {rounds}")
        figures["baseline"].append(await baseline(bootstrap, messages))
        for mode in SUBJECTS:
            figures[mode].append(await subject(bootstrap, mode, messages))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5_000, help="events per subject")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true", help="one round of 1,000 events")
    arguments = parser.parse_args()
    messages, rounds = (1_000, 1) if arguments.quick else (arguments.messages, arguments.rounds)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # group coordinator chatter
    tune_collector(ServiceSettings().gc_young_threshold)
    console = Console(width=140)
    with tempfile.TemporaryDirectory(prefix="bench-consumer-") as tmp:
        kafka = broker(Path(tmp))
        try:
            figures = asyncio.run(run(kafka.bootstrap_servers, messages, rounds, console.print))
        finally:
            kafka.stop()
    table = Table(
        title=f"CPU per message, µs: a service's consumer vs a bare aiokafka consumer, "
        f"{messages:,} events, {rounds} interleaved round(s) (min / median / max)"
    )
    for column in ("subject", "µs per message", "baseline (bare)", "ratio subject / baseline"):
        table.add_column(column)
    base = figures["baseline"]
    for mode in SUBJECTS:
        ratio = spread(ratios(figures[mode], base))
        table.add_row(mode, spread(figures[mode]), spread(base), ratio)
    console.print(table)
    console.print(f"broker: {kafka.origin}; machine: {os.cpu_count()} cores (shared)")
    out = REPO / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "consumer.json").write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
