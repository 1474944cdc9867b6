"""Throughput of the whole discovery loop, every service a process, on the real broker.

Prints:
- measurements per second through the loop (registry, explorer, sampler, a synthetic actuator
  worker at zero latency, projector) for a random walk over a 400-entity space;
- the cost of a fully memoised 80-entity operation: a second walk over a space already measured
  in full, where every measurement is reused from the sample store.

Uses KAFKA_BOOTSTRAP_SERVERS when set, otherwise starts the local broker (deploy/local/kafka.sh)
on a free port for the run. Run: .venv/bin/python benchmarks/bench_loop.py [--window 16]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from discospace.client import Client, ClientError
from discospace.testing.kafka import (
    BrokerUnavailableError,
    KafkaBroker,
    broker_from_env,
    find_script,
    start_local_broker,
)
from discospace.testing.loop import REPO, Loop

ZERO_LATENCY = {"experiments": [{"experiment": "benchmark"}], "invalid_when": None}


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


def broker(workdir: Path) -> KafkaBroker:
    try:
        return broker_from_env(os.environ.get("KAFKA_BOOTSTRAP_SERVERS"))
    except BrokerUnavailableError:
        return start_local_broker(find_script([REPO]), workdir / "kafka")


def create_space(loop: Loop, name: str, spec: dict[str, Any]) -> str:
    path = loop.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    answer = loop.cli("space", "create", "-f", str(path))
    if answer.returncode != 0:
        raise SystemExit(f"space create failed: {answer.stderr.strip()}")
    return answer.stdout.strip()


def timed_walk(loop: Loop, space_id: str, window: int) -> tuple[float, dict[str, Any]]:
    """Seconds from the request to the operation's end as the projector reports it."""
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
            time.sleep(0.05)


def wait_for_actuator(loop: Loop) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = loop.cli("actuators", "--json")
        if answer.returncode == 0 and "benchmark" in answer.stdout:
            return
        time.sleep(0.3)
    raise SystemExit(f"the actuator never announced itself:\n{loop.logs()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=16, help="measurements in flight")
    arguments = parser.parse_args()
    console = Console()
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
            big = create_space(
                loop,
                "big",
                space("bench-a", [1, 2, 4, 8, 16, 32, 64, 128], [1e-5, 3e-5, 1e-4, 3e-4, 1e-3]),
            )
            seconds, progress = timed_walk(loop, big, arguments.window)
            small = create_space(
                loop, "small", space("bench-b", [1, 2, 4, 8, 16, 32, 64, 128], [1e-4])
            )
            first_seconds, first = timed_walk(loop, small, arguments.window)
            memo_seconds, memo = timed_walk(loop, small, arguments.window)
        finally:
            loop.stop()
            kafka.stop()
    measured = progress["counts"]["measured"]
    table = Table(title="discovery loop, every service a process (synthetic actuator, 0 latency)")
    for column in ("figure", "value"):
        table.add_column(column)
    table.add_row("services healthy after", f"{max(healthy.values()):.1f} s")
    table.add_row("random walk, 400 entities, window", str(arguments.window))
    table.add_row("  measured", str(measured))
    table.add_row("  wall time", f"{seconds:.2f} s")
    table.add_row("  measurements per second", f"{measured / seconds:.1f}")
    table.add_row("80-entity walk, first time (measured)", f"{first_seconds:.2f} s")
    table.add_row("80-entity walk, fully memoised", f"{memo_seconds:.2f} s")
    table.add_row(
        "  reused / measured", f"{memo['counts']['reused']} / {memo['counts']['measured']}"
    )
    table.add_row("  per reused entity", f"{1000 * memo_seconds / 80:.1f} ms")
    console.print(table)
    console.print(f"broker: {kafka.origin}; machine: {os.cpu_count()} cores (shared)")
    result = {
        "measured": measured,
        "seconds": seconds,
        "memoised_seconds": memo_seconds,
        "first_seconds": first_seconds,
        "memoised": memo["counts"],
        "first": first["counts"],
    }
    out = REPO / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "loop.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
