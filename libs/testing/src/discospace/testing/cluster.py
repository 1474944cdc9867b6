"""The chaos suite on a 3-broker KRaft cluster: lose a broker mid-run, lose nothing.

- `OwnCluster`: `deploy/local/kafka-cluster.sh` (three combined broker+controller nodes on
  127.0.0.1, plaintext, replication factor 3, `min.insync.replicas` 2, no unclean leader
  election) with the start/stop/kill of `chaos.OwnBroker`, plus `lose` (SIGKILL one node) and
  `restore` (start it again on its data and wait until all three brokers are registered).
- `replication_env`: the setting that makes a service create its topics with 3 replicas.
- `place_losses`: where the broker losses and returns go in a fault schedule, so that at most
  one node is down at a time (two down would leave the quorum without a majority).
- `nothing_lost`: from the log, every operation the CLI was told of is in the log, every
  request for samples was answered, every request sent to a pool got a completion or a
  failure, and every walk over a whole space answered every entity of that space.
- `replicated`: every topic of the run has 3 replicas, all in sync once the lost node is back.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiokafka.admin import AIOKafkaAdminClient

from discospace.events import (
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    OperationRequested,
    SamplesDrawn,
    SamplesRequested,
)
from discospace.testing.loop import REPO

if TYPE_CHECKING:
    from discospace.testing.chaos import ChaosRun, Log

CLUSTER_SCRIPT = REPO / "deploy" / "local" / "kafka-cluster.sh"
NODES = (1, 2, 3)
LOSS = "broker-loss"
RETURN = "broker-return"


class OwnCluster:
    """A kafka-cluster.sh cluster of its own: three nodes, one of which may be lost."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.env = {**os.environ, "KAFKA_CLUSTER_DIR": str(state_dir)}
        self.down: int | None = None
        """The node lost and not started again yet."""
        self._bootstrap = ""

    @property
    def bootstrap(self) -> str:
        """All three addresses (known once the cluster started)."""
        return self._bootstrap

    def address_of(self, node: int) -> str:
        return self._bootstrap.split(",")[node - 1]

    def run(self, *args: str) -> str:
        """kafka-cluster.sh with `args`; its output, or raise with its last lines."""
        return run_script(CLUSTER_SCRIPT, args, self.env)

    def start(self) -> None:
        self.run("start")
        self.down = None
        self._bootstrap = self.run("bootstrap").strip()

    def stop(self) -> None:
        self.run("stop")

    def kill(self) -> None:
        """SIGKILL every node (no clean shutdown), then let the script forget them."""
        for node in NODES:
            if node != self.down:
                self.run("kill-one", str(node))
        self.run("stop")

    def lose(self, node: int) -> None:
        """SIGKILL one node; the other two keep the quorum and every partition's majority."""
        if self.down is not None:
            raise RuntimeError(f"node {self.down} is already down; losing {node} too breaks quorum")
        self.run("kill-one", str(node))
        self.down = node

    def restore(self) -> int:
        """Start the lost node on its data; wait until the cluster has 3 brokers again."""
        if self.down is None:
            raise RuntimeError("no node is down")
        node, self.down = self.down, None
        self.run("start-one", str(node))
        return node


def replication_env(module: str, replicas: int) -> dict[str, str]:
    """The variable that makes service `module` create its topics with `replicas` replicas."""
    return {f"DISCOSPACE_{module.upper()}_TOPIC_REPLICATION": str(replicas)}


def run_script(script: Path, args: tuple[str, ...], env: dict[str, str]) -> str:
    """A broker script (kafka.sh, kafka-cluster.sh) with `args`; its output, or raise with the
    last lines of its errors."""
    result = subprocess.run(
        ["bash", str(script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{script.name} {' '.join(args)} failed: {result.stderr[-2000:]}")
    return result.stdout


def place_losses(
    victims: list[str], losses: int, down_faults: int, rng: random.Random
) -> list[str]:
    """`victims` with `losses` broker losses, each followed `down_faults` faults later (or at
    the end of its share of the schedule) by the lost node's return.

    The schedule is cut into `losses` equal shares and each share holds one loss and its
    return, so two nodes are never down at once.
    """
    if losses == 0:
        return victims
    placed: list[str] = []
    for share in range(losses):
        part = victims[share * len(victims) // losses : (share + 1) * len(victims) // losses]
        at = rng.randint(0, max(0, len(part) - down_faults))
        back = min(len(part), at + down_faults)
        placed += [*part[:at], LOSS, *part[at:back], RETURN, *part[back:]]
    return placed


def node_to_lose(seed: int, index: int) -> int:
    """Which node the `index`-th loss of a run kills: fixed by the seed."""
    return random.Random(f"{seed}-loss-{index}").choice(NODES)


# -- the invariants ------------------------------------------------------------------------------


def nothing_lost(run: ChaosRun, log: Log, space_size: int) -> list[str]:
    """Every broken 'nothing lost' invariant of the run, one sentence each."""
    return (
        _requests_in_log(run, log)
        + _samples_answered(run, log)
        + _pool_requests_answered(log)
        + _whole_space_answered(run, log, space_size)
    )


def _requests_in_log(run: ChaosRun, log: Log) -> list[str]:
    """The CLI was told each operation was requested: its OperationRequested is in the log."""
    logged = {e.operation_id for e in log.distinct(log.operations, OperationRequested)}
    missing = [op for op in run.tally.operations if op not in logged]
    if not missing:
        return []
    return [f"{len(missing)} operations requested but not in the log: {missing[:5]}"]


def _samples_answered(run: ChaosRun, log: Log) -> list[str]:
    """Every SamplesRequested of the run's operations has its SamplesDrawn."""
    wanted = set(run.tally.operations)
    asked = {
        (e.operation_id, e.request_index)
        for e in log.distinct(log.operations, SamplesRequested)
        if e.operation_id in wanted
    }
    drawn = {(e.operation_id, e.request_index) for e in log.distinct(log.operations, SamplesDrawn)}
    missing = sorted(asked - drawn)
    return [f"{len(missing)} requests for samples never answered: {missing[:5]}"] if missing else []


def _pool_requests_answered(log: Log) -> list[str]:
    """Every request sent to the pool has a completion or a failure of that request."""
    requested = {e.request_id for e in log.distinct(log.measure, MeasurementRequested)}
    answered = {
        e.request_id
        for kind in (MeasurementCompleted, MeasurementFailed)
        for e in log.distinct(log.measurements, kind)
    }
    missing = sorted(requested - answered)
    return [f"{len(missing)} measurement requests never answered: {missing[:5]}"] if missing else []


def _whole_space_answered(run: ChaosRun, log: Log, space_size: int) -> list[str]:
    """A walk over all of a space answered (measured, reused or failed) every entity of it."""
    short = {}
    for operation_id in run.tally.operations:
        answered = {
            e.entity_id
            for kind in (MeasurementCompleted, MeasurementFailed, MeasurementReused)
            for e in log.of(operation_id, kind)
        }
        if len(answered) != space_size:
            short[operation_id] = len(answered)
    return [f"{op}: {n} of the space's {space_size} entities answered" for op, n in short.items()]


def replicated(bootstrap: str, prefix: str, replicas: int, settle_s: float = 60.0) -> list[str]:
    """Every topic under `prefix` has `replicas` replicas, all in sync (given time to catch up)."""
    deadline = time.monotonic() + settle_s
    while True:
        broken = asyncio.run(_replication_problems(bootstrap, prefix, replicas))
        if not broken or time.monotonic() > deadline:
            return broken
        time.sleep(2.0)


async def _replication_problems(bootstrap: str, prefix: str, replicas: int) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        names = sorted(t for t in await admin.list_topics() if t.startswith(f"{prefix}."))
        described = await admin.describe_topics(names)
    finally:
        await admin.close()
    broken = [] if names else [f"no topic under {prefix}"]
    for topic in described:
        broken += _partition_problems(topic, replicas)
    return broken


def _partition_problems(topic: dict[str, Any], replicas: int) -> list[str]:
    name = topic["topic"]
    return [
        f"{name}[{p['partition']}]: replicas {p['replicas']}, in sync {p['isr']}"
        for p in topic.get("partitions") or []
        if len(p["replicas"]) != replicas or len(p["isr"]) != replicas
    ]
