"""Explorer replicas on the real broker: how long operations wait when a replica goes away, and
how long one explorer takes to start over a long history.

Prints:
- takeover latency: two explorer replicas, registry, sampler, projector and a synthetic actuator
  worker (0.2 s per measurement, so measurements stay in flight), six random walks placed two
  per partition of the operations topic. One replica (the one with two partitions) is stopped
  with SIGKILL or with SIGTERM; the figure is the time from the signal to the survivor's first
  decision (SamplesRequested or OperationCompleted, as the broker timestamps it) for an operation
  of the stopped replica's partitions, and when the survivor was given those partitions (its
  log). Default session timeout. The stopped replica is started again between trials.
- start-up over a long history: one explorer process started on topics already holding N events
  (whole histories of completed operations, cloned from a real one of the first part with fresh
  ids and published by a batching producer) and one new operation request; the time from
  starting the process to the broker's timestamp of that operation's OperationStarted, and to
  its log line saying the replay is done. Baseline, on the same topics right after: a bare
  aiokafka reader process (`benchmarks/bare_member.py read`) reading every event of them from
  the start (`getmany` to the end offsets, nothing decoded), timed from its launch to its exit;
  ratio of the replay to it.

Uses KAFKA_BOOTSTRAP_SERVERS when set, otherwise starts the local broker (deploy/local/kafka.sh)
on a free port for the run. Run: .venv/bin/python benchmarks/bench_replicas.py [--trials 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rich.console import Console
from rich.table import Table

from discospace.events import OperationParameters, OperationRequested, encode, new_event
from discospace.events.envelope import content_id
from discospace.events.topics import TopicNames
from discospace.explorer.service.placement import partition_of, spread_ids
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime.positions import end_offsets
from discospace.runtime.provisioning import provision_topics
from discospace.testing.kafka import (
    BrokerUnavailableError,
    KafkaBroker,
    broker_from_env,
    create_topics,
    delete_topics,
    find_script,
    start_local_broker,
)
from discospace.testing.loop import REPO, Loop, ServiceProcess

T = TypeVar("T")
PARTITIONS = 3
POOL = "replicas"
LATENCY_S = 0.2
CONCURRENCY = 6
WALKS_PER_PARTITION = 2
WALK_ENTITIES = 30
ACTUATOR = {"experiments": [{"experiment": "benchmark"}], "latency_s": LATENCY_S}
ENTITY_SPACE = [
    {"name": "number_gpus", "values": [2, 4]},
    {"name": "model_max_length", "values": [512, 1024, 2048, 4096, 8192]},
    {"name": "batch_size", "values": [1, 2, 4, 8, 16, 32, 64, 128]},
]
REPLICAS = ("explorer-a", "explorer-b")
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}
DECISIONS = frozenset({"SamplesRequested", "OperationCompleted"})
OWNED = "discospace_explorer_owned_partitions"
ACTIVE = "discospace_operations_active"
GIVEN = r"given partitions \[([\d, ]*)\] of \d+: .*"
REPLAYED = (
    r"folded (\d+) events of \d+ topics up to their end "
    r"\((\d+) ignored, (\d+) unreadable, \d+ failed\)"
)
"""The start-up fold's report (`runtime.folding.FoldReport`)."""
UUID = re.compile(rb'"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"')
CLONES = uuid.UUID("2f1d9c4e-6a3b-4f0e-8d7c-5b9a1e3c7f20")
REQUEST_ID = re.compile(rb'"req-[0-9a-f]{16}"')
SESSION_TIMEOUT_S = ExplorerSettings.model_fields["session_timeout_s"].default


def broker(workdir: Path) -> KafkaBroker:
    try:
        return broker_from_env(os.environ.get("KAFKA_BOOTSTRAP_SERVERS"))
    except BrokerUnavailableError:
        pass
    script, state = find_script([REPO]), workdir / "kafka"
    try:
        return start_local_broker(script, state)
    except BaseException:  # interrupted while starting: the broker may be up, stop it by pid
        env = {**os.environ, "KAFKA_STATE_DIR": str(state)}
        subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, check=False)
        raise


@dataclass(frozen=True)
class Logged:
    """One record as the broker holds it: enough to route and time it without decoding."""

    topic: str
    timestamp_ms: int
    kind: str
    key: str
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


@dataclass
class Log:
    """The spaces, operations and measurements topics, read as they grow."""

    bootstrap: str
    topics: TopicNames
    records: list[Logged] = field(default_factory=list)
    consumer: AIOKafkaConsumer | None = None

    async def start(self) -> None:
        read = (self.topics.spaces, self.topics.operations, self.topics.measurements)
        self.consumer = AIOKafkaConsumer(
            *read, bootstrap_servers=self.bootstrap, auto_offset_reset="earliest"
        )
        await self.consumer.start()

    async def stop(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()

    async def until(self, found: Callable[[], T | None], what: str, timeout_s: float = 90) -> T:
        """Read on until `found()` gives something; fail after `timeout_s`."""
        assert self.consumer is not None
        deadline = time.monotonic() + timeout_s
        while (answer := found()) is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"{what}: not seen after {timeout_s} s")
            for records in (await self.consumer.getmany(timeout_ms=100)).values():
                self.records += [logged(r) for r in records]
        return answer

    async def settle(self, seconds: float) -> None:
        """Read whatever the other partitions still hold from the last `seconds`."""
        end = time.monotonic() + seconds
        await self.until(lambda: True if time.monotonic() > end else None, "settling")

    def of(self, key: str, kind: str) -> list[Logged]:
        return [r for r in self.records if r.key == key and r.kind == kind]


def logged(record: Any) -> Logged:
    headers = tuple(record.headers or ())
    kind = dict(headers).get("event-type", b"").decode()
    key = record.key.decode() if record.key else ""
    return Logged(record.topic, record.timestamp, kind, key, record.value, headers)


# --- the deployment --------------------------------------------------------------------------


def start_deployment(loop: Loop) -> None:
    for name in ("registry", "sampler", "projector"):
        loop.start(name)
    loop.actuator("actuator", POOL, ACTUATOR, DISCOSPACE_ACTUATOR_CONCURRENCY=str(CONCURRENCY))
    for name in REPLICAS:
        loop.start(name, "explorer")
    loop.wait_healthy()


def register_space(loop: Loop) -> str:
    """The space id, once the actuator has announced its experiment and the registry took it."""
    path = loop.workdir / "space.yaml"
    experiment = {"actuator": "synthetic", "experiment": "benchmark"}
    spec = {
        "sample_store": "bench",
        "entity_space": ENTITY_SPACE,
        "measurement_space": [experiment],
    }
    path.write_text(yaml.safe_dump(spec))
    loop.wait_for_catalog(["benchmark"])
    return loop.cli_ok("space", "create", "-f", str(path)).strip()


def walk_request(operation_id: str, space_id: str, entities: int, seed: int) -> OperationRequested:
    parameters = OperationParameters(
        number_entities=entities, batch_size=2, seed=seed, single_measurement=False
    )
    return new_event(
        OperationRequested,
        operation_id=operation_id,
        space_id=space_id,
        operator="random_walk",
        parameters=parameters,
        requested_by="bench-replicas",
    )


async def request_walks(bootstrap: str, topics: TopicNames, space_id: str, ids: list[str]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for seed, operation_id in enumerate(ids):
            request = walk_request(operation_id, space_id, WALK_ENTITIES, seed)
            await producer.send_and_wait(topics.operations, encode(request), key=request.key())
    finally:
        await producer.stop()


def owned(explorer: ServiceProcess) -> set[int]:
    return {p for p in range(PARTITIONS) if explorer.metric(OWNED, {"partition": str(p)}) == 1.0}


def wait_for_shares(loop: Loop, timeout_s: float = 90) -> dict[str, set[int]]:
    """The partitions each replica decides for, once they share all of them."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shares = {name: owned(loop.services[name]) for name in REPLICAS}
        parts = list(shares.values())
        if all(parts) and not set.intersection(*parts) and set.union(*parts) == {0, 1, 2}:
            return shares
        time.sleep(0.1)
    raise SystemExit(f"the replicas never shared the partitions:\n{loop.logs()}")


# --- part 1: takeover -----------------------------------------------------------------------


@dataclass(frozen=True)
class Takeover:
    """Seconds from the signal until the survivor was given the partitions, and decided; and
    the bare consumer group's takeover by the same signal, measured right after."""

    given_s: float
    decided_s: float
    bare_given_s: float = math.nan


def log_lines(log_path: Path, pattern: str) -> list[tuple[float, re.Match[str]]]:
    """(wall time, match) of every line of a service's JSON log whose message matches."""
    found = []
    for line in log_path.read_text(errors="replace").splitlines():
        entry = json.loads(line) if line.startswith("{") else {}
        if match := re.fullmatch(pattern, entry.get("message", "")):
            found.append((datetime.fromisoformat(entry["ts"]).timestamp(), match))
    return found


def given_at(log_path: Path, since: float, partitions: set[int]) -> float | None:
    """When the survivor's log says it was given `partitions` (among others) after `since`."""
    for at, match in log_lines(log_path, GIVEN):
        if at >= since and partitions <= {int(p) for p in match[1].split(",")}:
            return at
    return None


def first_decision(log: Log, ids: set[str], since: float) -> float | None:
    """The broker time of the first decision for `ids` at or after `since`.

    The stopped replica gave its partitions up (it stopped deciding) before the survivor was
    given them, so every decision after that moment is the survivor's.
    """
    times = [
        r.timestamp_ms / 1000
        for r in log.records
        if r.key in ids and r.kind in DECISIONS and r.timestamp_ms / 1000 >= since
    ]
    return min(times, default=None)


def stop_replica(explorer: ServiceProcess, how: str) -> float:
    """Send `how` to the replica; the wall time it was sent. Returns once it has exited."""
    assert explorer.process is not None
    sent = time.time()
    explorer.process.send_signal(SIGNALS[how])
    explorer.process.wait(timeout=60)
    return sent


async def takeover(loop: Loop, log: Log, space_id: str, tag: str, how: str) -> Takeover:
    shares = wait_for_shares(loop)
    victim, survivor = sorted(REPLICAS, key=lambda name: -len(shares[name]))
    ids = spread_ids(tag, WALKS_PER_PARTITION, PARTITIONS)
    theirs = {i for i in ids if partition_of(i, PARTITIONS) in shares[victim]}
    await request_walks(loop.bootstrap, loop.topics, space_id, ids)
    await log.until(
        lambda: True if all(log.of(i, "MeasurementCompleted") for i in ids) else None,
        f"{tag}: a first measurement of every walk",
    )
    sent = stop_replica(loop.services[victim], how)
    survivor_log = loop.services[survivor].log_path
    given = await log.until(
        lambda: given_at(survivor_log, sent, shares[victim]), f"{tag}: the takeover"
    )
    await log.until(lambda: first_decision(log, theirs, given), f"{tag}: a decision")
    await log.settle(1.0)
    decided = first_decision(log, theirs, given)
    assert decided is not None
    loop.services[victim].start().wait_healthy()
    bare = await bare_takeover(loop.bootstrap, loop.workdir / f"bare-{tag}", how)
    return Takeover(given - sent, decided - sent, bare)


async def bare_takeover(bootstrap: str, folder: Path, how: str) -> float:
    """Seconds from `how` sent to one of two bare group members (the one with two partitions)
    until the other is given them."""
    folder.mkdir()
    topic, group = f"bare-{uuid.uuid4().hex[:12]}", f"bare-{uuid.uuid4().hex[:12]}"
    await create_topics(bootstrap, {topic: PARTITIONS})
    script = REPO / "benchmarks" / "bare_member.py"
    session_ms = str(int(SESSION_TIMEOUT_S * 1000))
    members = {
        name: subprocess.Popen(
            [
                sys.executable,
                str(script),
                "member",
                bootstrap,
                topic,
                group,
                session_ms,
                folder / name,
            ]
        )
        for name in ("a", "b")
    }
    try:
        shares = await _bare_shares(folder, timeout_s=60)
        victim, survivor = sorted(shares, key=lambda name: -len(shares[name]))
        sent = time.time()
        members[victim].send_signal(SIGNALS[how])
        members[victim].wait(timeout=60)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for at, partitions in _assignments(folder / survivor):
                if at >= sent and shares[victim] <= partitions:
                    return at - sent
            await asyncio.sleep(0.02)
        raise SystemExit(f"bare group: no takeover of {sorted(shares[victim])} after 90 s")
    finally:
        for process in members.values():
            process.kill()
            process.wait()
        await delete_topics(bootstrap, [topic])


async def _bare_shares(folder: Path, timeout_s: float) -> dict[str, set[int]]:
    """Each member's latest partitions, once together they hold the whole topic."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        latest = {name: _assignments(folder / name)[-1:] for name in ("a", "b")}
        shares = {name: seen[0][1] for name, seen in latest.items() if seen}
        if len(shares) == 2 and sorted(p for s in shares.values() for p in s) == [0, 1, 2]:
            return shares
        await asyncio.sleep(0.05)
    raise SystemExit(f"bare group: the two members did not share the topic in {timeout_s:g} s")


def _assignments(path: Path) -> list[tuple[float, set[int]]]:
    """(wall time, partitions) of each assignment a bare member wrote."""
    if not path.exists():
        return []
    lines = [line.split(" ", 1) for line in path.read_text().splitlines() if " " in line]
    return [(float(at), {int(p) for p in parts.split(",") if p}) for at, parts in lines]


async def completed_walk(log: Log) -> list[Logged]:
    """Every record of one completed walk, measurements included, in log order."""

    def complete() -> str | None:
        for r in log.records:
            measured = len(log.of(r.key, "MeasurementCompleted"))
            if r.kind == "OperationCompleted" and measured >= WALK_ENTITIES:
                return r.key
        return None

    chosen = await log.until(complete, "a completed walk with all its measurements")
    return [r for r in log.records if r.key == chosen]


@dataclass(frozen=True)
class History:
    """A registered space and every record of one completed walk on it: what old histories
    are cloned from."""

    space: Logged
    walk: list[Logged]


async def measure_takeovers(loop: Loop, trials: int) -> tuple[dict[str, list[Takeover]], History]:
    """Takeover figures by signal, and what to build long histories from."""
    start_deployment(loop)
    space_id = register_space(loop)
    log = Log(loop.bootstrap, loop.topics)
    await log.start()
    try:
        results: dict[str, list[Takeover]] = {how: [] for how in SIGNALS}
        for trial in range(trials):
            for how in SIGNALS:
                tag = f"{how.lower()}-{trial}"
                results[how].append(await takeover(loop, log, space_id, tag, how))
        walk = await completed_walk(log)
        space = await log.until(
            lambda: next(iter(log.of(space_id, "SpaceRegistered")), None), "the space"
        )
    finally:
        await log.stop()
    return results, History(space, walk)


# --- part 2: start-up over a long history ----------------------------------------------------


def clone(record: Logged, operation_id: str, new_id: str) -> bytes:
    """The record's event as another operation's: its ids replaced, every other field kept."""
    value = record.value.replace(quoted(operation_id), quoted(new_id))
    value = UUID.sub(lambda m: quoted(str(uuid.uuid5(CLONES, new_id + m[0].decode()))), value)
    return REQUEST_ID.sub(lambda m: quoted("req-" + content_id(new_id, m[0].decode())), value)


def quoted(text: str) -> bytes:
    return f'"{text}"'.encode()


async def publish_history(bootstrap: str, topics: TopicNames, history: History, events: int) -> str:
    """Publish the space, whole cloned walks up to `events` events in all, and a new request;
    the new operation's id."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=512 * 1024
    )
    await producer.start()
    try:
        space = history.space
        sent = [await producer.send(topics.spaces, space.value, key=space.key.encode())]
        names = {"operations": topics.operations, "measurements": topics.measurements}
        source = history.walk[0].key
        for number in range((events - 2) // len(history.walk)):
            new_id = f"old-{number}"
            for record in history.walk:
                topic = names[record.topic.rsplit(".", 1)[1]]
                value = clone(record, source, new_id)
                sent.append(
                    await producer.send(topic, value, new_id.encode(), headers=list(record.headers))
                )
        await asyncio.gather(*sent)
        request = walk_request("op-new", space.key, 8, seed=1)
        await producer.send_and_wait(topics.operations, encode(request), key=request.key())
    finally:
        await producer.stop()
    return request.operation_id


@dataclass(frozen=True)
class Startup:
    """One explorer started over `events` events: its replay, and its first decision; and a
    bare consumer reading the same topics from the start."""

    events: int
    replayed: int
    unreadable: int
    active: int
    replayed_s: float
    decided_s: float
    bare_read_s: float = math.nan


async def start_explorer(loop: Loop, operation_id: str, offset: int) -> tuple[float, float]:
    """Start the explorer; the wall times of its launch and of the operation's OperationStarted
    (as the broker stamps it, read from `offset` of its partition). The consumer is ready
    before the launch, so it adds no work to the start."""
    partition = TopicPartition(loop.topics.operations, partition_of(operation_id, PARTITIONS))
    consumer = AIOKafkaConsumer(bootstrap_servers=loop.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([partition])
        consumer.seek(partition, offset)
        launched = time.time()
        loop.start("explorer")
        while time.time() < launched + 180:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in map(logged, records):
                    if record.kind == "OperationStarted" and record.key == operation_id:
                        return launched, record.timestamp_ms / 1000
        raise SystemExit(f"no OperationStarted for {operation_id} after 180 s")
    finally:
        await consumer.stop()


def active_operations(explorer: ServiceProcess, timeout_s: float = 10) -> int:
    """Operations the explorer runs once it has decided: 1 when every old one was complete."""
    deadline = time.monotonic() + timeout_s
    while not (active := explorer.metric(ACTIVE)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(active)


def replay_report(log_path: Path) -> tuple[float, int, int]:
    """When the explorer's log says its replay ended, with the events it read (folded or
    ignored) and the unreadable count."""
    [(at, match)] = log_lines(log_path, REPLAYED)
    return at, int(match[1]) + int(match[2]), int(match[3])


async def startup(loop: Loop, history: History, events: int) -> Startup:
    """Fill fresh topics with about `events` events, start one explorer, time its start."""
    await provision_topics(loop.bootstrap, loop.topics.fixed(), loop.topics, PARTITIONS)
    operation_id = await publish_history(loop.bootstrap, loop.topics, history, events)
    read = [loop.topics.spaces, loop.topics.operations, loop.topics.measurements]
    ends = await end_offsets(loop.bootstrap, read)
    partition = (loop.topics.operations, partition_of(operation_id, PARTITIONS))
    launched, decided = await start_explorer(loop, operation_id, ends[partition])
    explorer = loop.services["explorer"]
    active = active_operations(explorer)
    explorer.terminate()
    replayed_at, replayed, unreadable = replay_report(explorer.log_path)
    bare = await bare_read(loop.bootstrap, ends)
    await delete_topics(loop.bootstrap, loop.topics.fixed())
    held = sum(ends.values())
    return Startup(
        held, replayed, unreadable, active, replayed_at - launched, decided - launched, bare
    )


async def bare_read(bootstrap: str, ends: dict[tuple[str, int], int]) -> float:
    """Seconds from launching a bare reader process (`bare_member.py read`) until it has read
    every record up to `ends` from the start and exited: timed as the explorer's replay is,
    from the launch, its interpreter's start and imports included."""
    script = REPO / "benchmarks" / "bare_member.py"
    listed = json.dumps([[topic, partition, end] for (topic, partition), end in ends.items()])
    began = time.perf_counter()
    done = await asyncio.create_subprocess_exec(
        sys.executable, str(script), "read", bootstrap, listed
    )
    if await done.wait() != 0:
        raise SystemExit("the bare reader failed")
    return time.perf_counter() - began


async def measure_startups(loops: list[Loop], history: History, sizes: list[int]) -> list[Startup]:
    """One explorer started over each size of history, on fresh topics of the first loop's
    broker (each added to `loops`, so it is stopped whatever happens)."""
    results = []
    for events in sizes:
        folder = loops[0].workdir / f"history-{events}"
        folder.mkdir()
        loops.append(Loop(loops[0].bootstrap, folder, TopicNames.unique("history")))
        results.append(await startup(loops[-1], history, events))
        loops[-1].stop()
    return results


# --- output ---------------------------------------------------------------------------------


def header(console: Console, trials: int, sizes: list[int]) -> None:
    walks = f"{PARTITIONS * WALKS_PER_PARTITION} random walks ({WALKS_PER_PARTITION} per partition"
    console.print(
        f"[bold]explorer replicas[/bold]: every service a process, real broker, {PARTITIONS} "
        f"partitions per topic\n1. takeover: 2 explorers, {walks}, {WALK_ENTITIES} entities, 2 "
        f"in flight), synthetic actuator {LATENCY_S} s per measurement (concurrency "
        f"{CONCURRENCY}); the replica with 2 partitions gets SIGKILL or SIGTERM, {trials} trials "
        f"each; session_timeout_s = {SESSION_TIMEOUT_S:g} (default). Seconds from the signal "
        "until the survivor is given the partitions (its log) and until its first "
        "SamplesRequested/OperationCompleted for their operations (broker timestamp).\n"
        f"2. start-up: one explorer over N = {', '.join(f'{n:,}' for n in sizes)} events "
        "(cloned histories of a completed walk) and one new request. Seconds from the launch "
        "until its replay is done (its log) and until the request's OperationStarted (broker "
        "timestamp); 'active' = 1: every old operation was read as complete."
    )


def spread(values: list[float], form: str = "{:.2f}") -> str:
    figures = (min(values), statistics.median(values), max(values))
    return " / ".join(form.format(value) for value in figures)


def takeover_table(results: dict[str, list[Takeover]]) -> Table:
    table = Table(title=f"takeover (session_timeout_s = {SESSION_TIMEOUT_S:g}, default), s")
    columns = (
        "signal",
        "given: min / median / max",
        "first decision",
        "bare group: given",
        "ratio given / bare",
        "ratio decision / bare",
    )
    for column in columns:
        table.add_column(column)
    for how, runs in results.items():
        given = [run.given_s for run in runs]
        decided = [run.decided_s for run in runs]
        bare = [run.bare_given_s for run in runs]
        table.add_row(
            how,
            spread(given),
            spread(decided),
            spread(bare),
            spread([g / b for g, b in zip(given, bare, strict=True)], "{:.2f}x"),
            spread([d / b for d, b in zip(decided, bare, strict=True)], "{:.2f}x"),
        )
    return table


def startup_table(results: list[Startup]) -> Table:
    table = Table(title="one explorer starting over a long history")
    columns = (
        "N events",
        "replayed (unreadable)",
        "active",
        "replay done",
        "OperationStarted",
        "bare read",
        "ratio replay / bare",
    )
    for column in columns:
        table.add_column(column)
    for run in results:
        table.add_row(
            f"{run.events:,}",
            f"{run.replayed:,} ({run.unreadable})",
            str(run.active),
            f"{run.replayed_s:.2f} s",
            f"{run.decided_s:.2f} s",
            f"{run.bare_read_s:.2f} s",
            f"{run.replayed_s / run.bare_read_s:.2f}x" if run.bare_read_s > 0 else "-",
        )
    return table


# --- main -----------------------------------------------------------------------------------


def stop_on_sigterm() -> None:
    """SIGTERM ends the run through the `finally` blocks, so everything started is stopped."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3, help="takeovers per signal")
    parser.add_argument("--history", default="0,20000,100000", help="N events, comma separated")
    arguments = parser.parse_args()
    sizes = [int(n) for n in arguments.history.split(",")]
    stop_on_sigterm()
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # a retried produce is no news here
    console = Console()
    header(console, arguments.trials, sizes)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp:
        workdir = Path(tmp)
        kafka = broker(workdir)
        loops = [Loop(kafka.bootstrap_servers, workdir)]
        try:
            takeovers, history = asyncio.run(measure_takeovers(loops[0], arguments.trials))
            loops[0].stop()
            console.print(takeover_table(takeovers))
            console.print(
                f"A killed replica is noticed when its session expires, {SESSION_TIMEOUT_S:g} s "
                f"after its last heartbeat (one every {SESSION_TIMEOUT_S / 3:.1f} s); one stopped "
                "with SIGTERM leaves the group, and the survivor hears of it at its next heartbeat."
            )
            startups = asyncio.run(measure_startups(loops, history, sizes))
            console.print(startup_table(startups))
        finally:
            for loop in loops:
                loop.stop()
            kafka.stop()
    console.print(
        f"cloned walk: {len(history.walk)} events; broker: {kafka.origin}; "
        f"machine: {os.cpu_count()} cores (shared); whole run {time.monotonic() - began:.0f} s"
    )
    result = {
        "session_timeout_s": SESSION_TIMEOUT_S,
        "takeover": {how: [vars(run) for run in runs] for how, runs in takeovers.items()},
        "startup": [vars(run) for run in startups],
    }
    out = REPO / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "replicas.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
