"""Throughput of the whole discovery loop, every service a process, on the real broker, beside
a bare aiokafka pipeline of the same hops on the same broker (`loop_pipeline.py`).

After an unmeasured warm-up of both (skipped by `--quick`), each of `--rounds` interleaved rounds
runs:
- the loop (registry, explorer, sampler, a synthetic actuator worker at zero latency, projector):
  a random walk over a fresh 400-entity space; measurements per second (between the Kafka record
  timestamps of its request and its completion, the broker's clock), and CPU milliseconds per
  measurement of every service process and the broker's JVM (its progress is read every
  `POLL_S`, as `operation create --watch` reads it);
- the bare pipeline, batched and one record at a time: the same figures for as many messages
  (400);
- a fully memoised 80-entity operation (a walk over a space measured in full already): seconds
  between the Kafka record timestamps of its request and its completion, and how many
  measurements it made (the actuator's calls: 0 expected).
Prints min / median / max of each and the ratios loop / baseline; writes results/loop.json.

Uses KAFKA_BOOTSTRAP_SERVERS when set (then the broker's CPU is not counted), otherwise starts
the local broker (deploy/local/kafka.sh, plaintext) on a free port for the run.
Run: .venv/bin/python benchmarks/bench_loop.py [--window 16] [--rounds 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import loop_pipeline as pipeline
import yaml
from aiokafka import AIOKafkaConsumer
from rich.console import Console
from rich.table import Table
from workload import broker

from discospace.client import Client, ClientError
from discospace.events import decode
from discospace.testing.loop import REPO, Loop

ZERO_LATENCY = {"experiments": [{"experiment": "benchmark"}], "invalid_when": None}
BATCH_SIZES = [1, 2, 4, 8, 16, 32, 64, 128]
LEARNING_RATES = [1e-5, 3e-5, 1e-4, 3e-4, 1e-3]
"""With two GPU counts and five sequence lengths: the 400 entities of a measured walk."""
PIPELINE_MESSAGES = len(BATCH_SIZES) * len(LEARNING_RATES) * 2 * 5
"""Measurements' worth of records through the bare pipeline per round: as many as the loop's
walk measures (2,000 before, which spread the pipeline's ramp over five times the work)."""


def space(store: str, batch_sizes: list[int], learning_rates: list[float]) -> dict[str, Any]:
    return {
        "sample_store": store,
        "entity_space": [
            {"name": "model_name", "values": ["llama3-8b"]},
            {"name": "number_gpus", "values": [2, 4]},
            {"name": "model_max_length", "values": [512, 1024, 2048, 4096, 8192]},
            {"name": "batch_size", "values": batch_sizes},
            {"name": "learning_rate", "values": learning_rates},
        ],
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }


def create_space(loop: Loop, name: str, spec: dict[str, Any]) -> str:
    path = loop.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    answer = loop.cli("space", "create", "-f", str(path))
    if answer.returncode != 0:
        raise SystemExit(f"space create failed: {answer.stderr.strip()}")
    return answer.stdout.strip()


POLL_S = 0.5
"""How often a walk's progress is read from the projector while it runs, as `operation create
--watch` reads it by default: each read is CPU of the projector's, counted in the loop's
figures (read every 50 ms before, its reads were about 1 ms of CPU per measurement)."""


def timed_walk(loop: Loop, space_id: str, window: int) -> tuple[float, dict[str, Any]]:
    """Seconds from the request to the operation's end as the projector reports it (wall clock
    of this process: the CLI's start and the last poll's wait included; `walk_seconds` reads the
    broker's clock), and the operation's progress."""
    path = loop.workdir / "walk.yaml"
    parameters = {"number_entities": "all", "batch_size": window, "seed": 1}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    started = time.perf_counter()
    answer = loop.cli("operation", "create", "-f", str(path), "--space", space_id)
    if answer.returncode != 0:
        raise SystemExit(f"operation create failed: {answer.stderr.strip()}")
    operation_id = answer.stdout.strip()
    with Client(loop.projector_url) as client:
        while True:
            try:
                progress = client.operation(operation_id).model_dump(mode="json")
                if progress["status"] in ("completed", "failed"):
                    return time.perf_counter() - started, progress
            except ClientError:  # not projected yet
                pass
            time.sleep(POLL_S)


def wait_for_actuator(loop: Loop) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = loop.cli("actuators", "--json")
        if answer.returncode == 0 and "benchmark" in answer.stdout:
            return
        time.sleep(0.3)
    raise SystemExit(f"the actuator never announced itself:\n{loop.logs()}")


def service_pids(loop: Loop) -> dict[str, int]:
    """The pid of every service process, by its name in the loop."""
    return {name: p.process.pid for name, p in loop.services.items() if p.process is not None}


def broker_pids(workdir: Path) -> dict[str, int]:
    """The local broker's JVM (from kafka.sh's pid file); none for a broker given by URL."""
    pid_file = workdir / "kafka" / "kafka.pid"
    return {"broker": int(pid_file.read_text().strip())} if pid_file.exists() else {}


def loop_round(loop: Loop, number: int, window: int, pids: dict[str, int]) -> dict[str, Any]:
    """A 400-entity walk on a space of its own (a fresh store: everything is measured); the
    CPU per measurement of every process (`pids`: name -> pid), and of all of them."""
    spec = space(f"bench-{number}", BATCH_SIZES, LEARNING_RATES)
    space_id = create_space(loop, f"big-{number}", spec)
    before = {name: pipeline.cpu_seconds([pid]) for name, pid in pids.items()}
    wall, progress = timed_walk(loop, space_id, window)
    measured = progress["counts"]["measured"]
    each = {  # before the topic is read for the timestamps (the broker's work, not the loop's)
        name: 1000 * (pipeline.cpu_seconds([pid]) - before[name]) / measured
        for name, pid in pids.items()
    }
    stamps = record_times(loop, progress["operation_id"])
    seconds = stamps["OperationCompleted"] - stamps["OperationRequested"]
    return {
        "per_second": measured / seconds,
        "per_second_wall": measured / wall,
        "cpu_ms": sum(each.values()),
        "cpu_ms_each": each,
    }


def memoised_round(loop: Loop, space_id: str, window: int) -> dict[str, float]:
    """A walk over a space measured in full already: seconds between the request's and the
    completion's record timestamps on the operations topic, and the measurements made."""
    _, progress = timed_walk(loop, space_id, window)
    stamps = record_times(loop, progress["operation_id"])
    return {
        "seconds": stamps["OperationCompleted"] - stamps["OperationRequested"],
        "measured": progress["counts"]["measured"],
        "reused": progress["counts"]["reused"],
    }


def record_times(loop: Loop, operation_id: str) -> dict[str, float]:
    """Kafka record timestamps (seconds) of the operation's request and completion."""

    async def read() -> dict[str, float]:
        consumer = AIOKafkaConsumer(
            loop.topics.operations, bootstrap_servers=loop.bootstrap, auto_offset_reset="earliest"
        )
        found: dict[str, float] = {}
        try:
            await consumer.start()
            while batch := await consumer.getmany(timeout_ms=1500):
                for record in (r for part in batch.values() for r in part):
                    event = decode(record.value)
                    if getattr(event, "operation_id", None) == operation_id:
                        found.setdefault(type(event).__name__, record.timestamp / 1000)
        finally:
            await consumer.stop()
        return found

    return asyncio.run(read())


def warm_up(loop: Loop, bootstrap: str, window: int, console: Console) -> None:
    """One unmeasured walk of 400 entities and one pipeline run of each mode: on a broker just
    started, the JVM's JIT compiler took a third of the broker's CPU through the first walk, and
    the loop's first round paid for it where the baseline, run after it, did not."""
    console.print("warm-up: a 400-entity walk and the pipeline, unmeasured")
    spec = space("bench-warm-up", BATCH_SIZES, LEARNING_RATES)
    timed_walk(loop, create_space(loop, "warm-up", spec), window)
    for mode in ("batched", "single"):
        pipeline.run(bootstrap, mode, PIPELINE_MESSAGES, window)


def spread(values: list[float], digits: int = 1) -> str:
    return " / ".join(
        f"{v:,.{digits}f}" for v in (min(values), statistics.median(values), max(values))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=16, help="measurements in flight")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument(
        "--quick", action="store_true", help="one round, for a smoke test of the benchmark"
    )
    arguments = parser.parse_args()
    rounds = 1 if arguments.quick else arguments.rounds
    console = Console(width=160)
    figures: dict[str, list[dict[str, Any]]] = {
        "loop": [],
        "batched": [],
        "single": [],
        "memoised": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as tmp:
        workdir = Path(tmp)
        kafka = broker(workdir)
        loop = Loop(kafka.bootstrap_servers, workdir)
        try:
            for name in ("registry", "explorer", "sampler", "projector"):
                loop.start(name)
            loop.actuator("actuator", "bench", ZERO_LATENCY)
            healthy = loop.wait_healthy()
            wait_for_actuator(loop)
            jvm = broker_pids(workdir)
            small_spec = space("bench-small", BATCH_SIZES, [1e-4])
            small = create_space(loop, "small", small_spec)
            timed_walk(loop, small, arguments.window)  # measures the 80 entities once
            if not arguments.quick:
                warm_up(loop, kafka.bootstrap_servers, arguments.window, console)
            for number in range(rounds):
                console.print(f"round {number + 1} of {rounds}")
                figures["loop"].append(
                    loop_round(loop, number, arguments.window, service_pids(loop) | jvm)
                )
                for mode in ("batched", "single"):
                    run = pipeline.run(
                        kafka.bootstrap_servers,
                        mode,
                        PIPELINE_MESSAGES,
                        arguments.window,
                        list(jvm.values()),
                    )
                    figures[mode].append(
                        {"per_second": run.per_second, "cpu_ms": run.cpu_ms_per_message}
                    )
                figures["memoised"].append(memoised_round(loop, small, arguments.window))
        finally:
            loop.stop()
            kafka.stop()
    print_table(console, figures, arguments.window, max(healthy.values()))
    console.print(f"broker: {kafka.origin}; machine: {os.cpu_count()} cores (shared)")
    out = REPO / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "loop.json").write_text(json.dumps(figures, indent=2) + "\n")


def print_table(
    console: Console, figures: dict[str, list[dict[str, Any]]], window: int, healthy: float
) -> None:
    loop = [f["per_second"] for f in figures["loop"]]
    table = Table(
        title=f"discovery loop vs a bare aiokafka pipeline of the same hops, window {window}, "
        f"{len(loop)} interleaved rounds (min / median / max)"
    )
    for column in ("figure", "loop", "baseline", "ratio loop / baseline"):
        table.add_column(column)
    for mode in ("batched", "single"):
        base = [f["per_second"] for f in figures[mode]]
        table.add_row(
            f"measurements per second (baseline: {mode})",
            spread(loop),
            spread(base),
            spread([a / b for a, b in zip(loop, base, strict=True)], 3),
        )
    table.add_row(
        "  the same, by the client's wall clock (the CLI's start and the last poll included)",
        spread([f["per_second_wall"] for f in figures["loop"]]),
        "",
        "",
    )
    for mode in ("batched", "single"):
        cpu = [f["cpu_ms"] for f in figures["loop"]]
        base = [f["cpu_ms"] for f in figures[mode]]
        table.add_row(
            f"CPU ms per measurement, services + broker (baseline: {mode})",
            spread(cpu, 2),
            spread(base, 2),
            spread([a / b for a, b in zip(cpu, base, strict=True)], 1),
        )
    for name in figures["loop"][0]["cpu_ms_each"]:
        table.add_row(
            f"  of which {name}, CPU ms per measurement",
            spread([f["cpu_ms_each"][name] for f in figures["loop"]], 2),
            "",
            "",
        )
    memo = figures["memoised"]
    table.add_row(
        "80-entity walk, fully memoised: request to completion (record timestamps), s",
        spread([m["seconds"] for m in memo], 2),
        "",
        "",
    )
    table.add_row(
        "  measured (actuator calls) / reused",
        " ".join(f"{m['measured']:.0f}/{m['reused']:.0f}" for m in memo),
        "",
        "",
    )
    table.add_row("services healthy after", f"{healthy:.1f} s", "", "")
    console.print(table)


if __name__ == "__main__":
    main()
