"""The whole discovery loop as real processes: every service, on one broker and fresh topics.

Used by the end-to-end tests and by the loop benchmark. Each service runs as
`python -m discospace.<service>` with its own port and log file; the CLI runs as the installed
`discospace` command with the same broker, topic prefix and projector, as a user would run it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer

from discospace.events import Event, decode
from discospace.events.topics import TopicNames
from discospace.runtime.security import client_kwargs
from discospace.testing.kafka import free_port

REPO = Path(__file__).resolve().parents[5]
CORE_SERVICES = ("registry", "explorer", "sampler", "projector")


@dataclass
class ServiceProcess:
    """One `python -m discospace.<module>` process, with its own port, env and log file."""

    name: str
    module: str
    port: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    def start(self) -> ServiceProcess:
        """Start (or start again) the process, appending to its log."""
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", f"discospace.{self.module}"],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.started_at = time.monotonic()
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url(path), timeout=5) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def wait_healthy(self, timeout_s: float = 90.0) -> float:
        """Seconds from process start until /health answered 200."""
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.running:
                raise AssertionError(f"{self.name} exited: {self.log_tail()}")
            try:
                if self.get("/health")[0] == 200:
                    return time.monotonic() - self.started_at
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} not healthy: {self.log_tail()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is committed."""
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then the exit status (killed after `timeout_s`)."""
        assert self.process is not None
        if self.running:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} ignored SIGTERM for {timeout_s}s") from None

    def log_tail(self, lines: int = 12) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def metric(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        """Sum of the samples of `name` on /metrics whose labels include `labels`."""
        wanted = [f'{key}="{value}"' for key, value in (labels or {}).items()]
        total = 0.0
        for line in self.get("/metrics")[1].splitlines():
            series, _, value = line.rpartition(" ")
            metric = series.split("{", 1)[0]
            if metric == name and all(label in series for label in wanted):
                total += float(value)
        return total


@dataclass
class Loop:
    """Every service of discospace as processes on one broker and one fresh topic prefix."""

    bootstrap: str
    workdir: Path
    topics: TopicNames = field(default_factory=lambda: TopicNames.unique("loop"))
    services: dict[str, ServiceProcess] = field(default_factory=dict)

    def base_env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "DISCOSPACE_TOPIC_PREFIX": self.topics.prefix,
            "DISCOSPACE_STORE_DATA_DIR": str(self.workdir / "store"),
            "DISCOSPACE_LOG_LEVEL": "INFO",
        }

    def start(self, name: str, module: str | None = None, **env: str) -> ServiceProcess:
        """Start service `name` (module `discospace.<module>`, default `name`), not waiting."""
        module = module or name
        # a port free now, and not one handed to another service of this loop that may not
        # have bound it yet (the kernel hands a closed port out again: two services raced for
        # one, and /health answered for the one that lost it)
        taken = {service.port for service in self.services.values()}
        port = free_port()
        while port in taken:
            port = free_port()
        environment = {
            **self.base_env(),
            f"DISCOSPACE_{module.upper()}_HTTP_PORT": str(port),
            **env,
        }
        log_path = self.workdir / f"{name}.log"
        self.services[name] = ServiceProcess(name, module, port, environment, log_path).start()
        return self.services[name]

    def actuator(self, name: str, pool: str, parameters: Mapping[str, Any], **env: str) -> None:
        """Start a synthetic actuator worker `name` serving `pool` with `parameters`."""
        self.start(
            name,
            "actuator",
            DISCOSPACE_ACTUATOR_POOL=pool,
            DISCOSPACE_ACTUATOR_PARAMETERS=json.dumps(parameters),
            DISCOSPACE_ACTUATOR_WORKER_ID=name,
            **env,
        )

    def wait_healthy(self, names: Iterable[str] | None = None) -> dict[str, float]:
        """Wait until every named (default: every) service answers /health; seconds each."""
        chosen = list(names) if names is not None else list(self.services)
        return {name: self.services[name].wait_healthy() for name in chosen}

    def kill(self, name: str) -> None:
        self.services[name].kill()

    def restart(self, name: str) -> float:
        """Start `name` again with the same port and settings; seconds until healthy."""
        service = self.services[name]
        service.kill()
        service.start()
        return service.wait_healthy()

    @property
    def projector_url(self) -> str:
        return self.services["projector"].url("")

    def cli(self, *args: str, timeout_s: float = 180.0) -> subprocess.CompletedProcess[str]:
        """Run the installed `discospace` command against this loop."""
        command = [str(Path(sys.executable).parent / "discospace"), *args]
        env = {**self.base_env(), "DISCOSPACE_PROJECTOR_URL": self.projector_url}
        return subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s
        )

    def cli_ok(self, *args: str) -> str:
        """Run the CLI, fail with its error and the services' logs unless it succeeds."""
        answer = self.cli(*args)
        if answer.returncode != 0:
            raise AssertionError(f"discospace {' '.join(args)}: {answer.stderr}{self.logs()}")
        return answer.stdout

    def cli_json(self, *args: str) -> Any:
        """The JSON a CLI command prints (give it `--json` or `--format json`)."""
        return json.loads(self.cli_ok(*args))

    def wait_for_catalog(self, experiments: Iterable[str], timeout_s: float = 60) -> None:
        """Wait until `discospace actuators` lists every named experiment."""
        wanted = set(experiments)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            answer = self.cli("actuators", "--json")
            if answer.returncode == 0 and all(name in answer.stdout for name in wanted):
                return
            time.sleep(0.5)
        raise AssertionError(f"actuators never announced {sorted(wanted)}: {self.logs()}")

    def wait_for_end(self, operation_id: str, timeout_s: float = 180) -> dict[str, Any]:
        """The operation's progress once it completed or failed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            answer = self.cli("operation", "show", operation_id, "--json")
            if answer.returncode == 0:
                progress = dict(json.loads(answer.stdout))
                if progress["status"] in ("completed", "failed"):
                    return progress
            time.sleep(0.5)
        raise AssertionError(f"{operation_id} did not end in {timeout_s}s: {self.logs()}")

    def events(self, topic: str, operation_id: str | None = None) -> list[Event]:
        """Every event on `topic` (of one operation when named), duplicates included, read
        with a plain consumer until the topic has been quiet for 1.5 s."""

        async def read() -> list[Event]:
            consumer = AIOKafkaConsumer(
                topic,
                bootstrap_servers=self.bootstrap,
                auto_offset_reset="earliest",
                **client_kwargs(),
            )
            records: list[Any] = []
            try:
                await consumer.start()
                while batch := await consumer.getmany(timeout_ms=1500):
                    records += [r for part in batch.values() for r in part]
            finally:
                await consumer.stop()
            events = [decode(r.value) for r in records]
            if operation_id is None:
                return events
            return [e for e in events if getattr(e, "operation_id", None) == operation_id]

        return asyncio.run(read())

    def stop(self) -> None:
        """SIGTERM every service (SIGKILL what does not stop)."""
        for service in self.services.values():
            if service.running:
                with contextlib.suppress(AssertionError):
                    service.terminate(timeout_s=15)

    def logs(self) -> str:
        """The tail of every service's log, for a failing test's message."""
        return "\n".join(f"--- {n}\n{s.log_tail()}" for n, s in self.services.items())
