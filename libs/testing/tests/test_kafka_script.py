"""deploy/local/kafka.sh: start, answer, report, stop, and leave nothing running."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from discospace.testing.kafka import KafkaBroker, find_script, free_port, start_local_broker

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[3]
SCRIPT = find_script([REPO_ROOT])


def _script(command: str, state_dir: Path, port: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAFKA_STATE_DIR": str(state_dir), "KAFKA_PORT": str(port)}
    return subprocess.run(
        ["bash", str(SCRIPT), command], env=env, capture_output=True, text=True, check=False
    )


def _process_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _port_free(port: int) -> bool:
    with closing(socket.socket()) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[tuple[KafkaBroker, Path]]:
    broker = start_local_broker(SCRIPT, tmp_path)
    yield broker, tmp_path
    broker.stop()


async def test_a_started_broker_answers_reports_running_and_stops_leaving_nothing_behind(
    own_broker: tuple[KafkaBroker, Path],
) -> None:
    broker, state_dir = own_broker
    port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
    pid = int((state_dir / "kafka.pid").read_text())
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    await admin.start()
    cluster = await admin.describe_cluster()
    await admin.close()

    running = _script("status", state_dir, port)
    again = _script("start", state_dir, port)
    broker.stop()
    stopped = _script("status", state_dir, port)

    assert [b["port"] for b in cluster["brokers"]] == [port]
    assert running.returncode == 0
    assert f"running on 127.0.0.1:{port} (pid {pid})" in running.stdout
    assert "already running" in again.stdout
    assert not _process_alive(pid)
    assert _port_free(port)
    assert stopped.returncode == 3
    assert not (state_dir / "kafka.pid").exists()
    assert "Kafka Server started" in (state_dir / "logs" / "server.log").read_text()


def test_starting_on_a_port_in_use_fails_with_one_clear_line_and_starts_nothing(
    tmp_path: Path,
) -> None:
    with closing(socket.socket()) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        result = _script("start", tmp_path, port)

    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"kafka.sh: port {port} is already in use; set KAFKA_PORT to a free port, "
        "or KAFKA_BOOTSTRAP_SERVERS to use the broker there."
    ]
    assert not (tmp_path / "kafka.pid").exists()


def test_stopping_a_broker_that_is_not_running_is_harmless(tmp_path: Path) -> None:
    result = _script("stop", tmp_path, free_port())

    assert (result.returncode, result.stdout.strip()) == (0, "kafka.sh: not running")
