"""deploy/local/: every setting the scripts honour reaches every process, the CLI and Prometheus.

The scripts run for real here: `demo.sh` with a stand-in CLI that records what it was given,
`services.sh scrape-config` to write the scrape config, and `services.sh worker` with a real
actuator worker on the shared broker, scraped by a real Prometheus.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from discospace.testing.kafka import free_port, unique_topic_name
from discospace.testing.prometheus import PrometheusProcess, find_binary, find_tool

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "deploy" / "local"
DEFAULT_PORTS = {
    "registry": 8101,
    "explorer": 8102,
    "sampler": 8103,
    "actuator": 8104,
    "projector": 8105,
    "actuator-cpu": 8106,
}
# Read by the scripts but not theirs to document: the shell's own, caches and homes.
STANDARD_VARIABLES = {"HOME", "XDG_CACHE_HOME", "PWD", "GOFLAGS", "EPOCHREALTIME"}

CLI_STAND_IN = """#!/usr/bin/env bash
# Records each call with the settings it saw; answers what demo.sh reads from the real CLI.
printf '%s\\t%s\\t%s\\n' "$*" "${KAFKA_BOOTSTRAP_SERVERS:-unset}" \\
  "${DISCOSPACE_PROJECTOR_URL:-unset}" >>"$CALLS"
case "$*" in
  "actuators --json") echo '[{"actuator": "cpu_train"}]' ;;
  "space create"*) echo space-1 ;;
  "operation create"*) echo operation-1 ;;
esac
"""


def _run(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(LOCAL / script), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _demo_calls(tmp_path: Path, settings: dict[str, str]) -> list[list[str]]:
    cli = tmp_path / "discospace"
    cli.write_text(CLI_STAND_IN)
    cli.chmod(0o755)
    calls = tmp_path / "calls.tsv"
    env = {
        "DISCOSPACE_CLI": str(cli),
        "CALLS": str(calls),
        "DISCOSPACE_DEMO_DIR": str(tmp_path / "out"),
        **settings,
    }
    result = _run("demo.sh", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return [line.split("\t") for line in calls.read_text().splitlines()]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts read these; a test sets the ones it means."""
    for name in list(os.environ):
        if name.startswith(("DISCOSPACE_", "KAFKA_", "PROMETHEUS_PORT")):
            monkeypatch.delenv(name)


@pytest.mark.usefixtures("clean_env")
def test_the_demo_cli_talks_to_the_broker_and_projector_on_the_ports_make_up_used(
    tmp_path: Path,
) -> None:
    calls = _demo_calls(
        tmp_path, {"KAFKA_PORT": "29092", "DISCOSPACE_PROJECTOR_HTTP_PORT": "18205"}
    )

    assert len(calls) > 5
    assert {(kafka, projector) for _, kafka, projector in calls} == {
        ("127.0.0.1:29092", "http://127.0.0.1:18205")
    }


@pytest.mark.usefixtures("clean_env")
def test_the_demo_cli_uses_an_existing_cluster_and_projector_url_when_they_are_given(
    tmp_path: Path,
) -> None:
    calls = _demo_calls(
        tmp_path,
        {
            "KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9092,kafka-2:9092",
            "KAFKA_PORT": "29092",
            "DISCOSPACE_PROJECTOR_URL": "http://store.example:8105",
        },
    )

    assert {(kafka, projector) for _, kafka, projector in calls} == {
        ("kafka-1:9092,kafka-2:9092", "http://store.example:8105")
    }


def _scrape_targets(config_path: Path) -> dict[str, dict[str, dict[str, str]]]:
    """job -> {target: labels}, read through the config's file_sd globs like Prometheus does."""
    config = yaml.safe_load(config_path.read_text())
    jobs: dict[str, dict[str, dict[str, str]]] = {}
    for job in config["scrape_configs"]:
        found = jobs.setdefault(job["job_name"], {})
        for sd in job["file_sd_configs"]:
            for pattern in sd["files"]:
                folder = Path(pattern).parent
                for path in sorted(folder.glob("*")):
                    if fnmatch.fnmatch(str(path), pattern):
                        for group in json.loads(path.read_text()):
                            found.update(dict.fromkeys(group["targets"], group["labels"]))
    return jobs


def _write_scrape_config(run_dir: Path, ports: dict[str, int]) -> Path:
    env = {"DISCOSPACE_RUN_DIR": str(run_dir)}
    env |= {f"DISCOSPACE_{n.upper().replace('-', '_')}_HTTP_PORT": str(p) for n, p in ports.items()}
    result = _run("services.sh", "scrape-config", env=env)
    assert result.returncode == 0, result.stderr
    return run_dir / "prometheus.yml"


@pytest.mark.usefixtures("clean_env")
def test_the_scrape_config_lists_every_process_of_make_up_on_the_port_it_was_given(
    tmp_path: Path,
) -> None:
    ports = {name: port + 1000 for name, port in DEFAULT_PORTS.items()}

    jobs = _scrape_targets(_write_scrape_config(tmp_path / "run", ports))

    assert {job: sorted(targets) for job, targets in jobs.items()} == {
        "registry": ["127.0.0.1:9101"],
        "explorer": ["127.0.0.1:9102"],
        "sampler": ["127.0.0.1:9103"],
        "actuator": ["127.0.0.1:9104", "127.0.0.1:9106"],
        "projector": ["127.0.0.1:9105"],
    }
    assert jobs["actuator"]["127.0.0.1:9106"] == {"process": "actuator-cpu", "pool": "cpu"}
    config = yaml.safe_load((tmp_path / "run" / "prometheus.yml").read_text())
    honoring = {job["job_name"] for job in config["scrape_configs"] if job.get("honor_labels")}
    assert honoring == {"actuator"}  # a worker's own pool label wins over its target's


@pytest.mark.usefixtures("clean_env")
def test_the_scrape_config_uses_the_default_ports_when_none_is_set(tmp_path: Path) -> None:
    jobs = _scrape_targets(_write_scrape_config(tmp_path / "run", {}))

    assert sorted(t for targets in jobs.values() for t in targets) == sorted(
        f"127.0.0.1:{port}" for port in DEFAULT_PORTS.values()
    )


@pytest.mark.integration
@pytest.mark.usefixtures("clean_env")
def test_promtool_accepts_the_generated_scrape_config(tmp_path: Path) -> None:
    config = _write_scrape_config(tmp_path / "run", {})

    result = subprocess.run(
        [find_tool("promtool", os.environ), "check", "config", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A .run/ of its own; whatever a test started there is stopped by `services.sh stop`."""
    run = tmp_path / "run"
    yield run
    _run("services.sh", "stop", env={"DISCOSPACE_RUN_DIR": str(run)})


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for whoever adopted it to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.integration
@pytest.mark.usefixtures("clean_env")
def test_a_worker_started_as_the_readme_shows_is_scraped_and_stopped_by_make_down(
    run_dir: Path, kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _write_scrape_config(run_dir, {})
    prometheus = PrometheusProcess(
        find_binary(os.environ), yaml.safe_load(config.read_text()), tmp_path
    )
    port = free_port()
    try:
        prometheus.wait_ready()
        started = _run(
            "services.sh",
            "worker",
            "probe",
            env={
                "DISCOSPACE_RUN_DIR": str(run_dir),
                "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
                "DISCOSPACE_TOPIC_PREFIX": unique_topic_name("scripts"),
                "DISCOSPACE_ACTUATOR_POOL": "probe-pool",
                "DISCOSPACE_ACTUATOR_HTTP_PORT": str(port),
            },
        )
        assert started.returncode == 0, started.stdout + started.stderr

        [up] = prometheus.client.wait_for(
            'up{job="actuator", process="worker-probe"} == 1', timeout_s=60
        )
        [info] = prometheus.client.wait_for('discospace_service_info{process="worker-probe"}')
    finally:
        prometheus.stop()
    pid = int((run_dir / "worker-probe.pid").read_text())
    stopped = _run("services.sh", "stop", env={"DISCOSPACE_RUN_DIR": str(run_dir)})

    assert (up.labels["instance"], up.labels["pool"]) == (f"127.0.0.1:{port}", "probe-pool")
    assert info.labels["service"] == "actuator"
    assert "worker-probe stopped" in stopped.stdout
    assert not _running(pid)
    assert [p.name for p in run_dir.glob("worker-probe.*")] == ["worker-probe.log"]
    assert not (run_dir / "targets" / "actuator" / "worker-probe.json").exists()


@pytest.mark.usefixtures("clean_env")
def test_a_service_port_taken_by_another_process_stops_the_start_with_one_sentence(
    run_dir: Path,
) -> None:
    """Another checkout's service on the port answered /health with 200, and the script
    printed "healthy" for a process of its own that had exited ("cannot listen")."""
    port = free_port()
    other = subprocess.Popen(
        ["python3", "-c", HEALTHY_ANYWAY, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port)
        started = _run(
            "services.sh",
            "worker",
            "probe",
            env={
                "DISCOSPACE_RUN_DIR": str(run_dir),
                "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9",  # never reached: refused first
                "DISCOSPACE_ACTUATOR_HTTP_PORT": str(port),
            },
        )
    finally:
        other.terminate()
        other.wait(timeout=10)
    assert started.returncode != 0
    assert f"port {port} of worker-probe is already in use by another process" in started.stderr
    assert "healthy" not in started.stdout
    assert not (run_dir / "worker-probe.pid").exists()


@pytest.mark.usefixtures("clean_env")
def test_a_taken_port_stops_the_start_before_any_service_is_launched(run_dir: Path) -> None:
    """The sampler's port was found taken after the registry and the explorer were launched,
    and the script exited leaving them running, their pid files in place."""
    ports = {name: free_port() for name in DEFAULT_PORTS}
    env = {f"DISCOSPACE_{n.upper().replace('-', '_')}_HTTP_PORT": str(p) for n, p in ports.items()}
    env |= {"DISCOSPACE_RUN_DIR": str(run_dir), "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9"}
    other = subprocess.Popen(
        ["python3", "-c", HEALTHY_ANYWAY, str(ports["sampler"])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(ports["sampler"])
        started = _run("services.sh", "start", env=env)
        launched = sorted(path.name for path in run_dir.glob("*.pid"))
    finally:
        other.terminate()
        other.wait(timeout=10)
        _run("services.sh", "stop", env=env)  # whatever it launched

    assert started.returncode != 0
    assert f"port {ports['sampler']} of sampler is already in use" in started.stderr
    assert launched == []


NEVER_READY = """#!/usr/bin/env bash
# A Prometheus that runs but never answers /-/ready (a slow storage replay, a stuck disk).
[[ "${1:-}" == --version ]] && { echo "prometheus, version 0.0.0"; exit 0; }
exec python3 -c 'import time; time.sleep(120)' "$@"
"""


@pytest.mark.usefixtures("clean_env")
def test_a_prometheus_never_ready_is_stopped_after_the_start_timeout(
    run_dir: Path, tmp_path: Path
) -> None:
    """The start waited for it without end."""
    stub = tmp_path / "prometheus"
    stub.write_text(NEVER_READY)
    stub.chmod(0o755)
    env = {
        "DISCOSPACE_RUN_DIR": str(run_dir),
        "PROMETHEUS_BIN": str(stub),
        "PROMETHEUS_PORT": str(free_port()),
        "PROMETHEUS_START_TIMEOUT": "1",
    }

    started = _run("prometheus.sh", "start", env=env)

    assert started.returncode != 0
    assert "prometheus was not ready after 1s; it was stopped" in started.stderr
    assert not (run_dir / "prometheus" / "prometheus.pid").exists()


HEALTHY_ANYWAY = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Healthy(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

HTTPServer(("127.0.0.1", int(sys.argv[1])), Healthy).serve_forever()
"""
"""Another process on the port answering every /health with 200 (another checkout's service)."""


def _wait_for_port(port: int) -> None:
    import socket
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


def _settings_read_by_the_scripts() -> set[str]:
    names: set[str] = set()
    for script in sorted(LOCAL.glob("*.sh")):
        names |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)(?::?[-?=])", script.read_text()))
    return names - STANDARD_VARIABLES


def test_the_readme_lists_every_setting_the_local_scripts_honour() -> None:
    readme = (REPO / "README.md").read_text()
    settings = _settings_read_by_the_scripts()

    assert {"KAFKA_PORT", "DISCOSPACE_RUN_DIR", "PROMETHEUS_CACHE_DIR"} <= settings
    assert "`DISCOSPACE_<NAME>_HTTP_PORT`" in readme
    assert sorted(name for name in settings if f"`{name}`" not in readme) == []
