"""The CLI starts light: a help page imports typer and the command module it shows, never the
domain, the event contracts, Kafka, pandas or the projector's client (they load in the
commands that use them). Checked by the modules a fresh interpreter holds, not by timings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from discospace.cli.main import NOUNS, app
from discospace.cli.settings import DEFAULT_TOPIC_PREFIX

HEAVY = (
    "aiokafka",
    "faststream",
    "pandas",
    "httpx",
    "discospace.core",
    "discospace.events",
    "rich",  # Typer's Rich help formatter alone took 0.15-0.2 s: help pages are plain
)
PROBE = """
import json, sys
sys.argv = ["discospace", *json.loads(sys.argv[1])]
from discospace.cli.main import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*arguments: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "Usage: discospace" in done.stdout
    return json.loads(done.stderr)


@pytest.mark.parametrize("arguments", [("--help",), ("operation", "create", "--help")])
def test_a_help_page_loads_no_domain_contracts_kafka_or_client(arguments) -> None:
    modules = _modules_after(*arguments)

    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == []
    ours = {m for m in modules if m.startswith("discospace.")}
    assert ours <= {
        "discospace.cli",
        "discospace.cli.main",
        "discospace.cli.settings",
        "discospace.cli.logs",
        "discospace.cli.operation",
    }


@pytest.mark.parametrize("name", sorted(NOUNS))
def test_each_command_is_listed_with_its_own_help(name: str) -> None:
    command = NOUNS[name].load()

    assert (command.help or "").strip().startswith(NOUNS[name].help)


def test_the_root_help_lists_every_command() -> None:
    from typer.testing import CliRunner

    listed = CliRunner().invoke(app, ["--help"]).output

    assert all(name in listed for name in NOUNS)


def test_the_default_topic_prefix_is_the_contracts_one() -> None:
    from discospace.events.topics import DEFAULT_PREFIX

    assert DEFAULT_TOPIC_PREFIX == DEFAULT_PREFIX


def test_a_command_loaded_on_demand_still_turns_a_user_error_into_one_line(tmp_path) -> None:
    from typer.testing import CliRunner

    answer = CliRunner().invoke(app, ["operation", "create", "-f", str(tmp_path / "absent.yaml")])

    assert answer.exit_code == 2
    assert answer.output.count("\n") == 1
    assert answer.output.startswith("error: ")
