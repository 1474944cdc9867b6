"""Chaos as a test: overlapping operations through every service while processes and the broker die.

A `ChaosRun` starts a broker of its own (`deploy/local/kafka.sh`, a state dir it keeps across
restarts, so a stopped or killed broker comes back with its data), every service as a process
(`Loop`) and two synthetic actuator workers on one pool. While rounds of 2-4 random walks run
at once on two spaces sharing a sample store (30 of their 40 entities in common), a seeded
schedule SIGKILLs a service at random moments and starts it again, and stops (SIGTERM) or
SIGKILLs the broker and starts it again on the same data.

At the end `check` reads the whole event log and the projector's views and returns every broken
invariant as a sentence: every operation ended, every drawn (entity, experiment) measured, reused
or failed with a reason, no (store, entity, experiment) measured twice by an actuator, the views'
counts equal a fold of the log. `decisions` gives what the explorer drew per operation (the order
of the entities its strategy drew, without ids or times), to compare two runs of one seed.

With `ChaosPlan.brokers == 3` the run is on a 3-broker KRaft cluster of its own
(`cluster.OwnCluster`, `deploy/local/kafka-cluster.sh`): services create their topics with 3
replicas, and the schedule SIGKILLs one node mid-run (`broker-loss`) and starts it again some
faults later (`broker-return`); `check` then also asks that nothing was lost and that every
topic is back to 3 replicas in sync. The single broker is started plaintext explicitly
(`KAFKA_SECURITY=plaintext`), as is the cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from discospace.events import (
    DeadLettered,
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    OperationCompleted,
    OperationFailed,
    SamplesDrawn,
    SamplesRequested,
    TopicNames,
)
from discospace.testing.cluster import (
    LOSS,
    RETURN,
    OwnCluster,
    node_to_lose,
    nothing_lost,
    place_losses,
    replicated,
    replication_env,
    run_script,
)
from discospace.testing.kafka import free_port
from discospace.testing.loop import REPO, Loop

SCRIPT = REPO / "deploy" / "local" / "kafka.sh"
POOL = "chaos"
WORKERS = ("actuator-1", "actuator-2")
SERVICES = ("registry", "explorer", "sampler", "projector", *WORKERS)
BROKER = "broker"
SHAPE: dict[str, list[Any]] = {
    "dataset_id": ["news-tokens-16384plus-entries-4096"],
    "model_name": ["llama3-8b"],
    "torch_dtype": ["bfloat16"],
    "gpu_model": ["NVIDIA-A100-80GB-PCIe"],
    "number_gpus": [2, 4],
    "model_max_length": [512, 1024, 2048, 4096, 8192],
}
BATCH_SIZES = ([1, 2, 4, 8], [2, 4, 8, 16])
"""The two spaces of a round: 40 entities each, 30 of them shared."""
SPACE_SIZE = 40
ENDED = (OperationCompleted, OperationFailed)


@dataclass(frozen=True)
class ChaosPlan:
    """What one chaos run does; the same plan (seed included) gives the same schedule."""

    seed: int = 13
    kills_per_service: int = 2
    broker_stops: int = 1
    broker_kills: int = 0
    operations_per_round: tuple[int, int] = (2, 4)
    pause_s: tuple[float, float] = (0.3, 2.5)
    """Time between two faults, drawn uniformly."""
    down_s: tuple[float, float] = (0.0, 1.0)
    """How long a killed service stays down before it is started again."""
    broker_down_s: tuple[float, float] = (3.0, 10.0)
    latency_s: float = 0.05
    """How long the synthetic actuator takes per measurement."""
    rounds_at_least: int = 1
    brokers: int = 1
    """1: one kafka.sh broker; 3: a kafka-cluster.sh cluster, topics replicated 3 times."""
    broker_losses: int = 0
    """On a cluster: how many times one node is SIGKILLed mid-run (one down at a time)."""
    loss_down_faults: int = 8
    """How many faults later a lost node is started again."""
    wait_healthy: bool = False
    """Wait for a restarted service to answer /health before the next fault (slower: a start
    takes seconds on a busy machine); by default the next fault may hit it while it starts."""

    def __post_init__(self) -> None:
        if self.brokers not in (1, 3):
            raise ValueError(f"a chaos run has 1 broker or a cluster of 3, not {self.brokers}")
        if self.broker_losses and self.brokers == 1:
            raise ValueError("a broker loss needs the 3-broker cluster (brokers=3)")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ChaosPlan:
        """The plan named by CHAOS_SEED, CHAOS_KILLS, CHAOS_BROKER_STOPS, CHAOS_BROKER_KILLS."""
        env = os.environ if environ is None else environ
        base = cls()
        return cls(
            seed=int(env.get("CHAOS_SEED", base.seed)),
            kills_per_service=int(env.get("CHAOS_KILLS", base.kills_per_service)),
            broker_stops=int(env.get("CHAOS_BROKER_STOPS", base.broker_stops)),
            broker_kills=int(env.get("CHAOS_BROKER_KILLS", base.broker_kills)),
        )

    @classmethod
    def cluster_from_env(cls, environ: dict[str, str] | None = None) -> ChaosPlan:
        """The cluster plan named by CHAOS_SEED, CHAOS_KILLS and CHAOS_BROKER_LOSSES: service
        kills and broker losses (whole-cluster stops are the single broker's run's job)."""
        env = os.environ if environ is None else environ
        base = cls()
        return cls(
            seed=int(env.get("CHAOS_SEED", base.seed)),
            kills_per_service=int(env.get("CHAOS_KILLS", base.kills_per_service)),
            broker_stops=0,
            broker_kills=0,
            brokers=3,
            broker_losses=int(env.get("CHAOS_BROKER_LOSSES", 1)),
        )

    def schedule(self) -> list[tuple[float, str]]:
        """(pause before, victim) for every fault, shuffled by the seed.

        A victim is a service name, `broker-stop`, `broker-kill`, or on a cluster
        `broker-loss` (one node SIGKILLed) and, `loss_down_faults` later, `broker-return`.
        """
        rng = random.Random(self.seed)
        victims = [name for name in SERVICES for _ in range(self.kills_per_service)]
        victims += ["broker-stop"] * self.broker_stops + ["broker-kill"] * self.broker_kills
        rng.shuffle(victims)
        victims = place_losses(victims, self.broker_losses, self.loss_down_faults, rng)
        return [(rng.uniform(*self.pause_s), victim) for victim in victims]

    def round_sizes(self, rounds: int) -> list[int]:
        """How many operations each round runs (2-4 by default), by the seed."""
        rng = random.Random(self.seed * 7919 + 1)
        return [rng.randint(*self.operations_per_round) for _ in range(rounds)]

    def walk_seed(self, round_index: int, position: int) -> int:
        """The random walk's seed of one operation: fixed by the plan, not by timing."""
        return self.seed * 1000 + round_index * 10 + position


class OwnBroker:
    """A deploy/local/kafka.sh broker that may be stopped, killed and started on its data."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.port = free_port()
        self.env = {
            **os.environ,
            "KAFKA_PORT": str(self.port),
            "KAFKA_STATE_DIR": str(state_dir),
            "KAFKA_CONTROLLER_PORT": str(free_port()),
            # kafka.sh's default is becoming SASL_SSL; these tests ask for plaintext explicitly.
            "KAFKA_SECURITY": "plaintext",
        }

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def run(self, command: str) -> None:
        """kafka.sh start|stop; raise with its last lines when it fails."""
        run_script(SCRIPT, (command,), self.env)

    def start(self) -> None:
        self.run("start")

    def stop(self) -> None:
        self.run("stop")

    def kill(self) -> None:
        """SIGKILL the broker's JVM (no clean shutdown), then let kafka.sh forget it."""
        pid_file = self.state_dir / "kafka.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
            time.sleep(0.5)
        self.run("stop")


@dataclass
class Tally:
    """What the chaos did: faults by victim, and the operations it started per round."""

    faults: Counter[str] = field(default_factory=Counter)
    rounds: list[list[tuple[str, int, str]]] = field(default_factory=list)
    """Per round: (operation id, walk seed, space id) of each operation."""
    errors: list[str] = field(default_factory=list)
    exits: Counter[str] = field(default_factory=Counter)
    """Services that ended by themselves (not killed by the schedule), restarted as a
    supervisor (systemd, Kubernetes) would; e.g. a service started while the broker is down
    refuses to start (exit 2)."""
    exit_reasons: list[str] = field(default_factory=list)
    timeline: list[str] = field(default_factory=list)
    """`HH:MM:SS.ffffff victim` (UTC) for each fault, to read beside the log's times."""

    @property
    def operations(self) -> list[str]:
        return [op for ops in self.rounds for op, _, _ in ops]


@dataclass
class ChaosRun:
    """One chaos run: a broker, every service, rounds of overlapping walks and the faults."""

    plan: ChaosPlan
    workdir: Path
    broker: OwnBroker | OwnCluster = field(init=False)
    loop: Loop = field(init=False)
    tally: Tally = field(default_factory=Tally)
    faulting: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.plan.brokers == 3:
            self.broker = OwnCluster(self.workdir / "kafka-cluster")
        else:
            self.broker = OwnBroker(self.workdir / "kafka")

    def __enter__(self) -> ChaosRun:
        self.broker.start()
        self.loop = Loop(self._service_bootstrap(), self.workdir, TopicNames.unique("chaos"))
        for name in ("registry", "sampler", "projector"):
            self.loop.start(name, **replication_env(name, self.plan.brokers))
        self.loop.start(
            "explorer",
            DISCOSPACE_EXPLORER_MEASUREMENT_RETRY_BACKOFF_S="0.2",
            **replication_env("explorer", self.plan.brokers),
        )
        parameters = {
            "experiments": [{"experiment": "benchmark"}],
            "latency_s": self.plan.latency_s,
            "invalid_when": None,
        }
        for worker in WORKERS:
            self.loop.actuator(
                worker,
                POOL,
                parameters,
                DISCOSPACE_ACTUATOR_CONCURRENCY="4",
                **replication_env("actuator", self.plan.brokers),
            )
        self.loop.wait_healthy()
        self.loop.wait_for_catalog({"benchmark"})
        return self

    def __exit__(self, *_: object) -> None:
        try:
            if hasattr(self, "loop"):
                self.loop.stop()
        finally:
            self.broker.stop()

    # -- the run ------------------------------------------------------------------------------

    def run(self, round_timeout_s: float = 240.0) -> Tally:
        """Rounds of overlapping walks while the schedule's faults happen; at least
        `plan.rounds_at_least` rounds, and rounds go on until the last fault is done."""
        chaos = threading.Thread(target=self._faults, name="chaos", daemon=True)
        supervisor = threading.Thread(target=self._supervise, name="supervisor", daemon=True)
        chaos.start()
        supervisor.start()
        try:
            index = 0
            while index < self.plan.rounds_at_least or chaos.is_alive():
                self._round(index, round_timeout_s)
                index += 1
            chaos.join()
        finally:
            self.done.set()
            supervisor.join()
        return self.tally

    def _supervise(self) -> None:
        """Start again a service that ended by itself, once no fault is under way."""
        while not self.done.wait(0.5):
            with self.faulting:
                for name, service in self.loop.services.items():
                    if service.process is not None and not service.running:
                        self.tally.exits[name] += 1
                        last = service.log_tail(1).strip()[-300:]
                        code = service.process.returncode
                        self.tally.exit_reasons.append(f"{name} exited ({code}): {last}")
                        service.start()

    def _faults(self) -> None:
        for pause, victim in self.plan.schedule():
            time.sleep(pause)
            try:
                with self.faulting:
                    self.tally.timeline.append(f"{datetime.now(UTC):%H:%M:%S.%f} {victim}")
                    self._fault(victim)
            except (AssertionError, RuntimeError) as error:
                self.tally.errors.append(f"{victim}: {error}")
        self._wait_all_healthy()

    def _wait_all_healthy(self, timeout_s: float = 180.0) -> None:
        """Every service answers /health (the supervisor restarts one that exits meanwhile)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.loop.wait_healthy()
                return
            except AssertionError as error:
                if time.monotonic() > deadline:
                    self.tally.errors.append(f"not every service came back: {error}")
                    return
                time.sleep(1.0)

    def _fault(self, victim: str) -> None:
        rng = random.Random(f"{self.plan.seed}-{victim}-{sum(self.tally.faults.values())}")
        if victim in (LOSS, RETURN):
            self._cluster_fault(victim)
            return
        if victim.startswith(BROKER):
            (self.broker.kill if victim == "broker-kill" else self.broker.stop)()
            self.tally.faults[victim] += 1
            time.sleep(rng.uniform(*self.plan.broker_down_s))
            self.broker.start()
            return
        self.loop.kill(victim)
        self.tally.faults[victim] += 1
        time.sleep(rng.uniform(*self.plan.down_s))
        self.loop.services[victim].start()
        if self.plan.wait_healthy:
            self.loop.services[victim].wait_healthy(timeout_s=180)

    def _service_bootstrap(self) -> str:
        """The services' KAFKA_BOOTSTRAP_SERVERS: every address of the broker or cluster."""
        return self.broker.bootstrap

    def _cluster_fault(self, victim: str) -> None:
        """SIGKILL one node of the cluster, or start the lost one again on its data."""
        if not isinstance(self.broker, OwnCluster):
            raise RuntimeError(f"{victim} needs the 3-broker cluster")
        if victim == LOSS:
            node = node_to_lose(self.plan.seed, self.tally.faults[LOSS])
            self.broker.lose(node)
        else:
            node = self.broker.restore()
        self.tally.faults[victim] += 1
        self.tally.timeline.append(f"{datetime.now(UTC):%H:%M:%S.%f} {victim} done: node {node}")

    def _round(self, index: int, timeout_s: float) -> None:
        """Two spaces on a fresh store, 2-4 walks on them at once, waited for."""
        count = self.plan.round_sizes(index + 1)[index]
        store = f"chaos-{self.plan.seed}-{index}"
        spaces = [
            self._space(store, f"r{index}-s{n}", sizes) for n, sizes in enumerate(BATCH_SIZES)
        ]
        chosen = [(spaces[n % 2], self.plan.walk_seed(index, n)) for n in range(count)]
        with ThreadPoolExecutor(count) as pool:
            ids = list(pool.map(lambda job: self._walk(*job), chosen))
            list(pool.map(lambda op: self._wait_ended(op, timeout_s), ids))
        started = zip(ids, chosen, strict=True)
        self.tally.rounds.append([(op, seed, sid) for op, (sid, seed) in started])

    def _space(self, store: str, name: str, batch_sizes: list[int]) -> str:
        shape = {**SHAPE, "batch_size": batch_sizes}
        spec = {
            "sample_store": store,
            "entity_space": [{"name": key, "values": values} for key, values in shape.items()],
            "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
        }
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec))
        return self._cli_retrying("space", "create", "-f", str(path))

    def _walk(self, space_id: str, seed: int) -> str:
        path = self.workdir / f"walk-{seed}.yaml"
        parameters = {"number_entities": "all", "sampler": "random", "seed": seed, "batch_size": 6}
        path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
        answer = self._cli_retrying("operation", "create", "-f", str(path), "--space", space_id)
        return answer.splitlines()[0]

    def _cli_retrying(self, *args: str, timeout_s: float = 300.0) -> str:
        """A CLI command, tried again while the broker or a service is down."""
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self.loop.cli(*args, timeout_s=120)
            if answer.returncode == 0:
                return answer.stdout.strip()
            if time.monotonic() > deadline:
                raise AssertionError(f"discospace {' '.join(args)}: {answer.stderr}")
            time.sleep(1.0)

    def _wait_ended(self, operation_id: str, timeout_s: float) -> None:
        with contextlib.suppress(AssertionError):
            self.loop.wait_for_end(operation_id, timeout_s)

    # -- the log and the views ----------------------------------------------------------------

    def log(self) -> Log:
        """Every event of the run's topics, read once the faults are over."""
        topics = self.loop.topics
        return Log(
            operations=self.loop.events(topics.operations),
            measurements=self.loop.events(topics.measurements),
            measure=self.loop.events(topics.measure(POOL)),
            dead_letters=self.loop.events(topics.dead_letter),
        )

    def view_counts(self, operation_id: str) -> dict[str, int] | None:
        """The projector's counts of one operation (None when it does not answer)."""
        answer = self.loop.cli("operation", "show", operation_id, "--json")
        if answer.returncode != 0:
            return None
        counts = json.loads(answer.stdout)["counts"]
        return {key: int(counts[key]) for key in ("measured", "reused", "failed")}


@dataclass
class Log:
    """The events of one run, by topic (duplicates included, as the topics hold them)."""

    operations: list[Event]
    measurements: list[Event]
    measure: list[Event]
    dead_letters: list[Event]

    def distinct(self, events: list[Event], kind: type[Any]) -> list[Any]:
        return list({e.event_id: e for e in events if isinstance(e, kind)}.values())

    def of(self, operation_id: str, kind: type[Any]) -> list[Any]:
        events = self.measurements if kind in _MEASUREMENT_KINDS else self.operations
        return [e for e in self.distinct(events, kind) if e.operation_id == operation_id]

    def counts(self, operation_id: str) -> dict[str, int]:
        """The fold of the log the projector's counts should equal."""
        completed = {e.request_id for e in self.of(operation_id, MeasurementCompleted)}
        reused = {e.request_id for e in self.of(operation_id, MeasurementReused)} - completed
        failed = (
            {
                e.request_id
                for e in self.of(operation_id, MeasurementFailed)
                if not e.retryable or e.request_id not in completed | reused
            }
            - completed
            - reused
        )
        return {"measured": len(completed), "reused": len(reused), "failed": len(failed)}


_MEASUREMENT_KINDS = (MeasurementCompleted, MeasurementFailed, MeasurementReused)


def check(run: ChaosRun, log: Log, settle_s: float = 90.0) -> list[str]:
    """Every broken invariant of the run, one sentence each (empty: all hold)."""
    broken: list[str] = []
    for operation_id in run.tally.operations:
        broken += _ended(log, operation_id) + _answered(log, operation_id)
    broken += _measured_once(log)
    broken += _views_equal_log(run, log, settle_s)
    broken += _same_decision_per_index(log, run.tally.operations)
    broken += nothing_lost(run, log, SPACE_SIZE)
    if run.plan.brokers > 1:
        broken += replicated(run.broker.bootstrap, run.loop.topics.prefix, run.plan.brokers)
    return broken


def _ended(log: Log, operation_id: str) -> list[str]:
    ends = [e for kind in ENDED for e in log.of(operation_id, kind)]
    if not ends:
        return [f"{operation_id} never ended (no OperationCompleted or OperationFailed)"]
    if isinstance(ends[0], OperationFailed):
        return [f"{operation_id} failed: {ends[0].reason}"]
    return []


def _answered(log: Log, operation_id: str) -> list[str]:
    """Every drawn entity has a completion, a reuse or a failure with its reason."""
    drawn = {entity for e in log.of(operation_id, SamplesDrawn) for entity in e.entity_ids}
    answered = {e.entity_id for kind in _MEASUREMENT_KINDS for e in log.of(operation_id, kind)}
    missing = drawn - answered
    if missing:
        first = sorted(missing)[:5]
        return [f"{operation_id}: {len(missing)} drawn entities never answered: {first}"]
    return []


def _measured_once(log: Log) -> list[str]:
    """No (store, entity, experiment) measured by an actuator twice."""
    completed = log.distinct(log.measurements, MeasurementCompleted)
    completed = [e for e in completed if e.provenance is None]
    per_pair = Counter((e.sample_store, e.entity_id, e.experiment_id) for e in completed)
    twice = {pair: n for pair, n in per_pair.items() if n > 1}
    if not twice:
        return []
    found = f"{len(twice)} (store, entity, experiment) measured more than once: {_first(twice)}"
    return [found, *(_evidence(log, pair) for pair in list(twice)[:3])]


def _evidence(log: Log, pair: tuple[str, str, str]) -> str:
    """What the log holds about one pair: each request to the pool and each completion."""

    def mine(event: Any) -> bool:
        return (event.sample_store, event.entity_id, event.experiment_id) == pair

    requests = [e for e in log.distinct(log.measure, MeasurementRequested) if mine(e)]
    done = [e for e in log.distinct(log.measurements, MeasurementCompleted) if mine(e)]
    lines = [f"  {pair}:"]
    lines += [
        f"    requested {e.occurred_at:%H:%M:%S.%f} op {e.operation_id} attempt {e.attempt} "
        f"request {e.request_id} event {e.event_id}"
        for e in requests
    ]
    lines += [
        f"    completed {e.occurred_at:%H:%M:%S.%f} op {e.operation_id} attempt {e.attempt} "
        f"request {e.request_id} by {e.worker_id}"
        for e in done
    ]
    return "\n".join(lines)


def _first(items: dict[Any, int], count: int = 5) -> str:
    return ", ".join(f"{key} x{n}" for key, n in list(items.items())[:count])


def _views_equal_log(run: ChaosRun, log: Log, settle_s: float) -> list[str]:
    """The projector's counts per operation equal the fold of the log (given time to catch up)."""
    expected = {op: log.counts(op) for op in run.tally.operations}
    deadline = time.monotonic() + settle_s
    while True:
        seen = {op: run.view_counts(op) for op in expected}
        differing = {op: (seen[op], want) for op, want in expected.items() if seen[op] != want}
        if not differing or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    return [
        f"{op}: views say {view}, the log says {want}" for op, (view, want) in differing.items()
    ]


def _same_decision_per_index(log: Log, operations: list[str]) -> list[str]:
    """Every SamplesRequested of one (operation, request_index) asks for the same thing."""
    fingerprints: dict[tuple[str, int], set[str]] = defaultdict(set)
    wanted = set(operations)
    for event in log.distinct(log.operations, SamplesRequested):
        if event.operation_id in wanted:
            fingerprints[(event.operation_id, event.request_index)].add(event.fingerprint())
    split = {key: len(found) for key, found in fingerprints.items() if len(found) > 1}
    if split:
        return [f"explorer decided differently for one request index: {_first(split)}"]
    return []


def decisions(run: ChaosRun, log: Log) -> list[list[tuple[int, tuple[str, ...]]]]:
    """Per round, per operation (walk seed, the entities its strategy drew, in order).

    Retries (explicit points) are left out: a measurement a kill cut short is retried, which the
    same seed does not decide. Ids and times are left out too, so two runs compare equal.
    """
    requests = {
        (e.operation_id, e.request_index): e
        for e in reversed(log.distinct(log.operations, SamplesRequested))
    }
    drawn: dict[tuple[str, int], SamplesDrawn] = {}
    for event in log.distinct(log.operations, SamplesDrawn):
        drawn.setdefault((event.operation_id, event.request_index), event)
    result = []
    for ops in run.tally.rounds:
        row = []
        for operation_id, seed, _ in ops:
            indexes = sorted(i for op, i in drawn if op == operation_id)
            order: list[str] = []
            for index in indexes:
                request = requests.get((operation_id, index))
                if request is not None and request.points is None:
                    order += drawn[(operation_id, index)].entity_ids
            row.append((seed, tuple(order)))
        result.append(row)
    return result


def summary(run: ChaosRun, log: Log) -> dict[str, Any]:
    """The counts to print: faults per victim, operations, measurements, reuses, dead letters."""
    completed = log.distinct(log.measurements, MeasurementCompleted)
    return {
        "seed": run.plan.seed,
        "kills": {name: run.tally.faults[name] for name in SERVICES},
        "broker_stops": run.tally.faults["broker-stop"],
        "broker_kills": run.tally.faults["broker-kill"],
        "broker_losses": run.tally.faults[LOSS],
        "broker_returns": run.tally.faults[RETURN],
        "brokers": run.plan.brokers,
        "service_bootstrap": run.loop.bootstrap,
        "rounds": len(run.tally.rounds),
        "operations": len(run.tally.operations),
        "measurement_requests": len(log.distinct(log.measure, MeasurementRequested)),
        "measurements": len(completed),
        "reuses": len(log.distinct(log.measurements, MeasurementReused)),
        "failures": len(log.distinct(log.measurements, MeasurementFailed)),
        "dead_letters": len(log.distinct(log.dead_letters, DeadLettered)),
        "exits": dict(run.tally.exits),
        "exit_reasons": list(run.tally.exit_reasons),
        "fault_errors": list(run.tally.errors),
    }


@contextlib.contextmanager
def chaos_run(plan: ChaosPlan, workdir: Path) -> Iterator[ChaosRun]:
    """A started `ChaosRun`, stopped (services and broker) when the block ends."""
    run = ChaosRun(plan, workdir)
    try:
        yield run.__enter__()
    finally:
        run.__exit__()
