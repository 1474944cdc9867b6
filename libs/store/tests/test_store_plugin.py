"""The pytest plugin: every store test runs per backend, and a missing server is a stated skip."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

_PROBE = """
import json, pathlib

def test_probe(store_client, store_backend, chdb_data_dir):
    store_client.command("INSERT INTO consumer_offsets (consumer) VALUES ('probe')")
    pathlib.Path("seen.json").write_text(json.dumps(
        {"backend": store_backend, "database": store_client.database, "dir": str(chdb_data_dir)}
    ))
"""

_LEFTOVERS = """
import json, pathlib
from discospace.store.client import StoreSettings, connect

seen = json.loads(pathlib.Path("seen.json").read_text())
client = connect(StoreSettings(url=None, data_dir=pathlib.Path(seen["dir"]), database="default"))
print("LEFT", client.command(
    "SELECT count() FROM system.databases WHERE name = {name:String}",
    parameters={"name": seen["database"]},
))
"""


def test_a_store_test_runs_on_chdb_and_skips_the_server_saying_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    pytester.makepyfile(test_probe=_PROBE)
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*SKIPPED*no ClickHouse server: set CLICKHOUSE_URL or run where a Docker engine answers*"]
    )
    seen = pytester.path.joinpath("seen.json").read_text()
    assert '"backend": "chdb"' in seen
    assert '"database": "test_' in seen


def test_the_fresh_database_of_a_test_is_dropped_after_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    pytester.makepyfile(test_probe=_PROBE)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "chdb").assert_outcomes(passed=1)
    leftovers = pytester.run(sys.executable, "-c", _LEFTOVERS)
    assert leftovers.ret == 0
    leftovers.stdout.fnmatch_lines(["LEFT 0"])
