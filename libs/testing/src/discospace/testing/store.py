"""pytest plugin: ClickHouse stores for tests, on embedded chDB and, where one exists, a server.

chDB opens one data dir per process, so the whole test session shares one chDB dir and every test
gets a fresh database in it (dropped afterwards). `store_client` is parametrised over the backends:
a test using it runs on chDB always and on a ClickHouse server when `CLICKHOUSE_URL` is set or
testcontainers can start one (otherwise that variant is skipped, saying why).

Imports of the store library, clickhouse-connect and chDB stay inside the fixtures so that loading
this plugin costs nothing to test runs that do not use it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

    from discospace.store.client import StoreSettings

CHDB = "chdb"
SERVER = "clickhouse-server"
STORE_BACKENDS = (CHDB, SERVER)
NO_SERVER = "no ClickHouse server: set CLICKHOUSE_URL or run where a Docker engine answers"
SERVER_IMAGE = os.environ.get(
    "DISCOSPACE_TEST_CLICKHOUSE_IMAGE", "clickhouse/clickhouse-server:25.8"
)
_CONTAINER_USER = "discospace"
_CONTAINER_READY_S = 60.0


@pytest.fixture(scope="session")
def chdb_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one chDB data dir of this test process (chDB cannot open two in one process)."""
    return tmp_path_factory.mktemp("chdb-store")


@pytest.fixture(scope="session")
def clickhouse_server_url() -> Iterator[str]:
    """URL of a ClickHouse server: `CLICKHOUSE_URL`, or a testcontainers one; skips when none."""
    configured = os.environ.get("CLICKHOUSE_URL")
    if configured:
        yield configured
        return
    container, reason = _start_container()
    if container is None:
        pytest.skip(f"{NO_SERVER} ({reason})")
    try:
        yield _container_url(container)
    finally:
        container.stop()


@pytest.fixture(params=STORE_BACKENDS)
def store_backend(request: pytest.FixtureRequest) -> str:
    """Which backend this test runs on: "chdb" or "clickhouse-server"."""
    return str(request.param)


@pytest.fixture
def store_settings(
    request: pytest.FixtureRequest, store_backend: str, chdb_data_dir: Path
) -> Iterator[StoreSettings]:
    """Settings naming a fresh, not yet created database on this test's backend.

    The database is dropped after the test, whoever created it.
    """
    if store_backend == SERVER:
        settings = _settings(url=request.getfixturevalue("clickhouse_server_url"))
    else:
        settings = _settings(data_dir=chdb_data_dir)
    yield settings
    _drop_database(settings)


@pytest.fixture
def store_client(store_settings: StoreSettings) -> Iterator[Client]:
    """A client on a fresh, migrated database, on each available backend."""
    yield from _migrated_client(store_settings)


@pytest.fixture
def chdb_store_client(chdb_data_dir: Path) -> Iterator[Client]:
    """A client on a fresh, migrated chDB database, for tests where the backend does not matter."""
    settings = _settings(data_dir=chdb_data_dir)
    yield from _migrated_client(settings)
    _drop_database(settings)


def _settings(*, url: str | None = None, data_dir: Path | None = None) -> StoreSettings:
    from discospace.store.client import StoreSettings

    database = f"test_{uuid.uuid4().hex[:12]}"
    if url is not None:
        return StoreSettings(url=url, database=database)
    return StoreSettings(url=None, data_dir=data_dir, database=database)


def _migrated_client(settings: StoreSettings) -> Iterator[Client]:
    from discospace.store.client import connect
    from discospace.store.migrations import migrate

    client = connect(settings)
    try:
        migrate(client)
        yield client
    finally:
        client.close()


def _drop_database(settings: StoreSettings) -> None:
    from discospace.store.client import connect

    client = connect(settings.model_copy(update={"database": "default"}))
    try:
        client.command(
            "DROP DATABASE IF EXISTS {database:Identifier}",
            parameters={"database": settings.database},
            use_database=False,
        )
    finally:
        client.close()


def _start_container() -> tuple[Any | None, str]:
    """A started ClickHouse container and "", or None and why there is none."""
    try:
        from testcontainers.core.container import DockerContainer
    except ImportError:
        return None, "testcontainers is not installed"
    try:
        container = (
            DockerContainer(SERVER_IMAGE)
            .with_exposed_ports(8123)
            .with_env("CLICKHOUSE_USER", _CONTAINER_USER)
            .with_env("CLICKHOUSE_PASSWORD", _CONTAINER_USER)
            .start()
        )
    except Exception as error:
        return None, _docker_failure(error)
    if not _wait_until_answering(_container_url(container)):
        container.stop()
        return None, f"{SERVER_IMAGE} did not answer within {_CONTAINER_READY_S:.0f}s"
    return container, ""


def _docker_failure(error: Exception) -> str:
    text = str(error).strip()
    if "Error while fetching server API version" in text:
        return "no Docker engine answered"
    first_line = text.splitlines()[0][:160] if text else type(error).__name__
    return f"Docker did not start {SERVER_IMAGE}: {first_line}"


def _container_url(container: Any) -> str:
    host = container.get_container_host_ip()
    port = container.get_exposed_port(8123)
    return f"http://{_CONTAINER_USER}:{_CONTAINER_USER}@{host}:{port}"


def _wait_until_answering(url: str) -> bool:
    import urllib.request

    ping = "http://" + url.split("@", 1)[1] + "/ping"
    deadline = time.monotonic() + _CONTAINER_READY_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(ping, timeout=2) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.5)
    return False
