"""pytest plugin: a real Prometheus server that scrapes the targets a test names.

`prometheus_server(targets)` starts the `prometheus` binary (`PROMETHEUS_BIN`, else the one
`deploy/local/prometheus.sh fetch` put in the cache, else `prometheus` on the PATH) on a free
port, with a generated config scraping `targets` every second and its storage in a temporary
dir, and returns a `PrometheusClient` over its HTTP API. Every server a test started is stopped
when the test ends (`module_prometheus_server`: when the module ends, for module fixtures).
Without the binary the test fails (integration tests are never skipped) and
says how to fetch it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from discospace.testing.kafka import free_port

BINARY_ENV = "PROMETHEUS_BIN"
CACHE_ENV = "PROMETHEUS_CACHE_DIR"
DEFAULT_JOB = "targets"
READY_TIMEOUT_S = 30.0
Targets = Sequence[str] | Mapping[str, Sequence[str]]


class PrometheusUnavailableError(Exception):
    """The server could not be found or started; the message says why in one sentence."""


class PrometheusQueryError(Exception):
    """Prometheus refused a query (bad PromQL) or did not answer."""


@dataclass(frozen=True)
class Sample:
    """One series of an instant-query result: its labels and its value at query time."""

    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class PrometheusClient:
    """A small client of the Prometheus HTTP API (`/api/v1/...`)."""

    base_url: str

    def query(self, promql: str) -> list[Sample]:
        """Evaluate an instant query; a vector or scalar result comes back as samples."""
        data = self._get("/api/v1/query", {"query": promql})
        if data["resultType"] == "scalar":
            return [Sample({}, float(data["result"][1]))]
        return [Sample(item["metric"], float(item["value"][1])) for item in data["result"]]

    def targets(self) -> list[dict[str, Any]]:
        """The active scrape targets, with `labels`, `health` ("up"/"down") and `lastError`."""
        targets: list[dict[str, Any]] = self._get("/api/v1/targets", {"state": "active"})[
            "activeTargets"
        ]
        return targets

    def wait_for(
        self,
        promql: str,
        until: Callable[[list[Sample]], bool] = bool,
        timeout_s: float = 30.0,
    ) -> list[Sample]:
        """Query until `until(samples)` holds (by default: any sample); fail after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            samples = self.query(promql)
            if until(samples):
                return samples
            if time.monotonic() > deadline:
                raise TimeoutError(f"{promql!r} gave {samples} for {timeout_s}s")
            time.sleep(0.25)

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        url = f"{self.base_url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            body = _error_body(error, path)
        except OSError as error:
            raise PrometheusQueryError(f"Prometheus at {self.base_url} did not answer") from error
        if body.get("status") != "success":
            raise PrometheusQueryError(f"{path} {dict(params)}: {body.get('error', body)}")
        return body["data"]


def _error_body(error: urllib.error.HTTPError, path: str) -> Any:
    """Prometheus explains a refused query in a JSON body next to its 4xx status."""
    try:
        return json.load(error)
    except ValueError:
        raise PrometheusQueryError(f"{path}: HTTP {error.code} {error.reason}") from error


def scrape_config(targets: Targets, interval_s: float = 1.0) -> dict[str, Any]:
    """The Prometheus config scraping `targets` (host:port list, or job name -> list)."""
    jobs = dict(targets) if isinstance(targets, Mapping) else {DEFAULT_JOB: targets}
    interval = f"{int(interval_s * 1000)}ms"
    return {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,
            "evaluation_interval": interval,
        },
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": list(hosts)}]}
            for job, hosts in jobs.items()
        ],
    }


def cache_dir(environ: Mapping[str, str]) -> Path | None:
    """Where `deploy/local/prometheus.sh fetch` puts prometheus and promtool (in its `bin/`):
    PROMETHEUS_CACHE_DIR, else `${XDG_CACHE_HOME:-$HOME/.cache}/discospace/prometheus`."""
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    if environ.get("XDG_CACHE_HOME"):
        return Path(environ["XDG_CACHE_HOME"]) / "discospace" / "prometheus"
    if environ.get("HOME"):
        return Path(environ["HOME"]) / ".cache" / "discospace" / "prometheus"
    return None


def find_tool(name: str, environ: Mapping[str, str]) -> str:
    """`prometheus` or `promtool`: PROMETHEUS_BIN (and promtool beside it), else the fetched
    one in the cache, else the one on the PATH."""
    cache = cache_dir(environ)
    candidates = [cache / "bin" / name] if cache else []
    if environ.get(BINARY_ENV):
        chosen = Path(environ[BINARY_ENV])
        candidates.insert(0, chosen if name == "prometheus" else chosen.with_name(name))
    for candidate in candidates:
        if os.access(candidate, os.X_OK) and candidate.is_file():
            return str(candidate)
    on_path = shutil.which(name, path=environ.get("PATH", ""))
    if on_path:
        return on_path
    raise PrometheusUnavailableError(
        f"The {name} binary was not found; run `deploy/local/prometheus.sh fetch` "
        f"(`make test` does) or set {BINARY_ENV} to the prometheus binary."
    )


def find_binary(environ: Mapping[str, str]) -> str:
    """The prometheus executable (see `find_tool`)."""
    return find_tool("prometheus", environ)


class PrometheusProcess:
    """One prometheus server process started for a test, with its own port and storage."""

    def __init__(self, binary: str, config: dict[str, Any], workdir: Path) -> None:
        self.port = free_port()
        self.log_path = workdir / "prometheus.log"
        config_path = workdir / "prometheus.yml"
        config_path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        command = [
            binary,
            f"--config.file={config_path}",
            f"--storage.tsdb.path={workdir / 'data'}",
            "--storage.tsdb.retention.time=1h",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.client = PrometheusClient(f"http://127.0.0.1:{self.port}")

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait until /-/ready answers 200; stop and raise with the log tail otherwise."""
        deadline = time.monotonic() + timeout_s
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise PrometheusUnavailableError(
                    f"prometheus did not become ready on port {self.port}: {self._log_tail()}"
                )
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.client.base_url}/-/ready", timeout=1) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def _log_tail(self) -> str:
        lines = self.log_path.read_text(errors="replace").strip().splitlines()
        return " | ".join(lines[-3:]) or "no output"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within 10 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


PrometheusFactory = Callable[..., PrometheusClient]


def _serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusFactory]:
    """The factory of the fixtures below; stops every server it started when resumed."""
    started: list[PrometheusProcess] = []

    def start(targets: Targets, *, scrape_interval_s: float = 1.0) -> PrometheusClient:
        try:
            binary = find_binary(os.environ)
            server = PrometheusProcess(
                binary, scrape_config(targets, scrape_interval_s), tmp_path_factory.mktemp("prom")
            )
            started.append(server)
            server.wait_ready()
        except PrometheusUnavailableError as error:
            pytest.fail(str(error), pytrace=False)
        return server.client

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def prometheus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusFactory]:
    """Factory: `prometheus_server(["127.0.0.1:8101"])` or `prometheus_server({"job": [...]})`
    starts a real Prometheus scraping those targets every second and returns its client."""
    yield from _serving(tmp_path_factory)


@pytest.fixture(scope="module")
def module_prometheus_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PrometheusFactory]:
    """`prometheus_server` for a module's fixtures: its servers run until the module ends."""
    yield from _serving(tmp_path_factory)
