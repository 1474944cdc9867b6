"""The loop's baseline: a bare aiokafka pipeline with the loop's hops, on the same broker.

A measurement in the discovery loop crosses four topics: the explorer's request (operations)
-> the sampler, which asks a pool (measure.<pool>) -> the actuator, which publishes the result
(measurements) -> the sampler, which publishes the samples drawn (operations) -> the explorer,
which decides the next request. Here each of the three relays (sampler in, actuator, sampler
out) is its own process doing only what a Kafka client must: read a record, decode its JSON,
encode a JSON reply of the same size, send it, commit. The driver (the explorer's place) keeps
`window` requests in flight, as the walk does.

Two ways, the bounds of what the runtime could do:
- `single`: one record at a time, every send awaited (`send_and_wait`), a commit after each;
- `batched`: `getmany`, every reply sent without waiting, then one flush and one commit per
  batch (effects acknowledged before the offsets that caused them are committed).

Used by `bench_loop.py`, which runs it interleaved with the loop and prints the ratio.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

HOPS = ("request", "measure", "result", "drawn")
"""The four topics a measurement crosses (named after what they carry)."""
RELAYS = (("request", "measure"), ("measure", "result"), ("result", "drawn"))
STALL_S = 60.0
"""No answer for this long: a relay is gone, the run fails rather than hangs."""
PAYLOAD_BYTES = 700
"""About the size of a measurement event's JSON (ids, entity values, results, timestamps)."""


@dataclass(frozen=True)
class PipelineRun:
    mode: str
    prefix: str
    """The run's topics are `<prefix>.<hop>` for each of `HOPS`."""
    messages: int
    seconds: float
    cpu_seconds: float
    """CPU (user + system) of the relays, the driver and the broker over the timed part."""

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds

    @property
    def cpu_ms_per_message(self) -> float:
        return 1000 * self.cpu_seconds / self.messages


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU seconds used so far by the processes `pids` (gone ones count 0), from
    /proc (Linux), so the benchmark needs no package for it."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def _message(number: int) -> bytes:
    body = {"event_id": str(uuid.uuid4()), "number": number, "pad": ""}
    body["pad"] = "x" * max(0, PAYLOAD_BYTES - len(json.dumps(body)))
    return json.dumps(body).encode()


def _reply(value: bytes) -> bytes:
    decoded: dict[str, Any] = json.loads(value)
    decoded["event_id"] = str(uuid.uuid4())
    return json.dumps(decoded).encode()


async def _relay(bootstrap: str, prefix: str, source: str, target: str, mode: str) -> None:
    consumer = AIOKafkaConsumer(
        f"{prefix}.{source}",
        bootstrap_servers=bootstrap,
        group_id=f"{prefix}-{source}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    await consumer.start()
    await producer.start()
    try:
        while True:
            if mode == "single":
                record = await consumer.getone()
                await producer.send_and_wait(f"{prefix}.{target}", _reply(record.value))
                await consumer.commit()
                continue
            batches = await consumer.getmany(timeout_ms=50, max_records=500)
            records = [r for batch in batches.values() for r in batch]
            if not records:
                continue
            for record in records:
                await producer.send(f"{prefix}.{target}", _reply(record.value))
            await producer.flush()
            await consumer.commit()
    finally:
        await producer.stop()
        await consumer.stop()


def _relay_process(bootstrap: str, prefix: str, source: str, target: str, mode: str) -> None:
    asyncio.run(_relay(bootstrap, prefix, source, target, mode))


async def _create_topics(bootstrap: str, prefix: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(f"{prefix}.{h}", 1, 1) for h in HOPS])
    finally:
        await admin.close()


async def _drive(
    bootstrap: str, prefix: str, messages: int, window: int, mode: str, cpu: Callable[[], float]
) -> tuple[float, float]:
    """Seconds and CPU seconds to get `messages` answers with `window` requests in flight
    (after one warm-up round trip through every relay)."""
    consumer = AIOKafkaConsumer(
        f"{prefix}.drawn",
        bootstrap_servers=bootstrap,
        group_id=f"{prefix}-driver",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    await consumer.start()
    await producer.start()
    try:
        await _round_trip(producer, consumer, prefix, 0, 1, 1, mode)  # every relay is ready
        started, cpu_before = time.perf_counter(), cpu()
        await _round_trip(producer, consumer, prefix, 1, messages, window, mode)
        return time.perf_counter() - started, cpu() - cpu_before
    finally:
        await producer.stop()
        await consumer.stop()


async def _round_trip(
    producer: AIOKafkaProducer,
    consumer: AIOKafkaConsumer,
    prefix: str,
    first: int,
    messages: int,
    window: int,
    mode: str,
) -> None:
    sent = answered = 0
    progressed = time.monotonic()
    while answered < messages:
        if time.monotonic() - progressed > STALL_S:
            raise RuntimeError(f"the pipeline stalled at {answered} of {messages} answers")
        while sent < messages and sent - answered < window:
            if mode == "single":
                await producer.send_and_wait(f"{prefix}.request", _message(first + sent))
            else:
                await producer.send(f"{prefix}.request", _message(first + sent))
            sent += 1
        if mode != "single":
            await producer.flush()
        batches = await consumer.getmany(timeout_ms=1000, max_records=500)
        answered += sum(len(batch) for batch in batches.values())
        if batches:
            progressed = time.monotonic()
            await consumer.commit()


def run(
    bootstrap: str, mode: str, messages: int, window: int, broker_pids: Iterable[int] = ()
) -> PipelineRun:
    """`messages` measurements' worth of records through the four hops; fresh topics each run.
    `broker_pids`: the broker's processes, whose CPU counts too."""
    prefix = f"pipeline-{mode}-{uuid.uuid4().hex[:8]}"
    asyncio.run(_create_topics(bootstrap, prefix))
    context = multiprocessing.get_context("spawn")
    relays = [
        context.Process(target=_relay_process, args=(bootstrap, prefix, s, t, mode), daemon=True)
        for s, t in RELAYS
    ]
    for relay in relays:
        relay.start()
    try:
        pids = (os.getpid(), *broker_pids, *(r.pid for r in relays if r.pid is not None))
        seconds, cpu = asyncio.run(
            _drive(bootstrap, prefix, messages, window, mode, lambda: cpu_seconds(pids))
        )
    finally:
        for relay in relays:
            relay.terminate()
            relay.join(10)
    return PipelineRun(mode, prefix, messages, seconds, cpu)
