"""Connecting to the store: chDB and servers, and the readable errors when that fails."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from discospace.store.client import StoreSettings, connect
from discospace.store.errors import StoreError, StoreUnreachableError

pytestmark = pytest.mark.integration

_TRY_CONNECT = """
import sys
from pathlib import Path
from discospace.store.client import StoreSettings, connect
from discospace.store.errors import StoreError
try:
    clients = []  # held open: a client that is garbage collected closes its engine handle
    for data_dir in sys.argv[1:]:
        clients.append(connect(StoreSettings(url=None, data_dir=Path(data_dir))))
except StoreError as error:
    print(type(error).__name__, error, sep=": ")
else:
    print("connected")
"""

_HOLD_DIR = """
import sys
from pathlib import Path
from discospace.store.client import StoreSettings, connect
client = connect(StoreSettings(url=None, data_dir=Path(sys.argv[1])))
print("ready", flush=True)
sys.stdin.read()
client.close()
"""


def _python(script: str, *args: str, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        **popen,
    )


def _try_connect(*data_dirs: Path) -> str:
    process = _python(_TRY_CONNECT, *map(str, data_dirs))
    out, _ = process.communicate(timeout=60)
    return out.strip()


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """Another process holding a chDB data dir open until the test ends."""
    data_dir = tmp_path / "held"
    process = _python(_HOLD_DIR, str(data_dir), stdin=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    yield data_dir, process
    if process.poll() is None:
        process.communicate(timeout=60)


def test_connecting_creates_the_database_and_selects_it(store_settings: StoreSettings) -> None:
    client = connect(store_settings)
    try:
        assert client.database == store_settings.database
        assert client.command("SELECT currentDatabase()") == store_settings.database
    finally:
        client.close()


def test_two_clients_on_one_chdb_dir_share_its_data(chdb_store_client, chdb_data_dir) -> None:
    other = connect(StoreSettings(url=None, data_dir=chdb_data_dir, database="default"))
    try:
        tables = other.query(
            "SELECT name FROM system.tables WHERE database = {database:String}",
            parameters={"database": chdb_store_client.database},
        ).result_rows
        assert ("events",) in tables
    finally:
        other.close()


def test_a_chdb_dir_held_by_another_process_is_reported_with_its_pid(holder) -> None:
    data_dir, process = holder
    message = _try_connect(data_dir)
    assert message == (
        f"DataDirLockedError: The chDB data dir {data_dir} is in use by another process "
        f"(pid {process.pid}); stop it, or give this one another data dir or a ClickHouse "
        "server through CLICKHOUSE_URL."
    )


def test_a_chdb_dir_opens_again_once_its_holder_has_stopped(holder) -> None:
    data_dir, process = holder
    process.communicate(timeout=60)
    assert _try_connect(data_dir) == "connected"


def test_a_second_chdb_dir_in_one_process_is_reported(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    message = _try_connect(first, second)
    assert message.startswith(
        f"DataDirConflictError: This process already has the chDB store at {first} open"
    )
    assert message.endswith(f"close those clients before opening {second}, or use that dir.")


def test_a_chdb_dir_that_cannot_be_created_is_reported(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=r"^Cannot create the chDB data dir .*a-file/store: "):
        connect(StoreSettings(url=None, data_dir=blocker / "store"))


def test_a_server_port_where_nobody_listens_is_reported_as_unreachable() -> None:
    port = _free_port()
    with pytest.raises(StoreUnreachableError) as caught:
        connect(StoreSettings(url=f"http://127.0.0.1:{port}", connect_timeout_s=2))
    assert str(caught.value) == (
        f"Cannot reach ClickHouse at http://127.0.0.1:{port}: connection refused."
    )


def test_a_server_host_that_does_not_resolve_is_reported_as_unreachable() -> None:
    with pytest.raises(
        StoreUnreachableError, match=r"no-such-host\.invalid:8123: host name not found"
    ):
        connect(StoreSettings(url="http://user:pw@no-such-host.invalid", connect_timeout_s=2))


def test_a_peer_that_does_not_speak_http_is_reported_as_unreachable() -> None:
    with _hanging_up_server() as port, pytest.raises(StoreUnreachableError) as caught:
        connect(StoreSettings(url=f"http://127.0.0.1:{port}", connect_timeout_s=2))
    assert str(caught.value) == (
        f"Cannot reach ClickHouse at http://127.0.0.1:{port}: "
        "the server closed the connection without an HTTP answer."
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _hanging_up_server:  # noqa: N801 (used as a context manager, reads like one)
    """A TCP listener that reads each request and hangs up without a word."""

    def __enter__(self) -> int:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return int(self._listener.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                connection.recv(65536)


def test_a_chdb_dir_whose_status_is_a_folder_is_one_sentence(tmp_path: Path) -> None:
    """The lock probe caught only FileNotFoundError: IsADirectoryError escaped bare."""
    data_dir = tmp_path / "odd"
    (data_dir / "status").mkdir(parents=True)
    message = _try_connect(data_dir)
    assert message.startswith(f"StoreError: Cannot open the chDB store at {data_dir}")
