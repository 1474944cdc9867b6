"""Hostile input files get one line and exit 2 from every command that reads them, with nothing
published (Kafka at 127.0.0.1:9 answers nothing: a command that got that far would say so)."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.cli.main import app

runner = CliRunner()

OPERATION = "space_id: space-1\noperator: random_walk\n"
SPACE = """sample_store: s
entity_space:
  - {name: x, values: [1, 2]}
measurement_space:
  - {actuator: a, experiment: e}
"""


def cli(*args: str):
    return runner.invoke(app, ["--kafka", "127.0.0.1:9", *args])


COMMANDS = [
    ("space", "describe", "--file"),
    ("space", "create", "--file"),
    ("operation", "create", "--file"),
]


def _one_line(result, pattern: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output[:2000]
    assert "Traceback" not in result.output
    assert pattern in lines[0], lines[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_5000_level_nested_file_is_one_line(tmp_path: Path, command) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 5000 + "]" * 5000)
    _one_line(cli(*command, str(path)), "nested more than 64 levels")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_duplicate_key_is_named_with_its_line(tmp_path: Path, command) -> None:
    path = tmp_path / "dup.yaml"
    text = SPACE if command[0] == "space" else OPERATION
    path.write_text(
        text + "space_id: twice\n" if command[0] == "operation" else text + "sample_store: t\n"
    )
    _one_line(cli(*command, str(path)), "is given twice")


def test_a_20000_character_sample_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(SPACE.replace("sample_store: s", "sample_store: " + "s" * 20000))
    _one_line(cli("space", "create", "--file", str(path)), "over the limit of 256 characters")


def test_400_digit_integers_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(SPACE.replace("[1, 2]", "[1, " + "9" * 400 + "]"))
    _one_line(cli("space", "describe", "--file", str(path)), "is too large")


def test_an_operation_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "op.yaml"
    path.write_text(OPERATION + "#" * (1 << 20))
    _one_line(cli("operation", "create", "--file", str(path)), "over the limit of 1048576 bytes")


def test_a_missing_operation_file_is_still_named(tmp_path: Path) -> None:
    _one_line(cli("operation", "create", "--file", str(tmp_path / "no.yaml")), "no such file")
