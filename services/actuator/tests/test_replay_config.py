"""Mistakes in a replay config: one sentence naming the file and the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.actuator.plugins import ActuatorConfigError, load_actuator
from discospace.actuator.replay import ReplayActuator, ReplayParameters
from discospace.core.errors import SpecError

CSV = "model,tokens\nm1,10.0\n"


def config_file(folder: Path, document: dict[str, Any], name: str = "replay.yaml") -> Path:
    (folder / "runs.csv").write_text(CSV)
    path = folder / name
    path.write_text(yaml.safe_dump(document))
    return path


def table(**fields: Any) -> dict[str, Any]:
    base = {
        "file": "runs.csv",
        "experiments": ["e"],
        "properties": ["model"],
        "targets": ["tokens"],
    }
    return {**base, **fields}


def build(folder: Path, document: dict[str, Any]) -> ReplayActuator:
    return ReplayActuator(ReplayParameters(config=config_file(folder, document)))


def test_a_table_path_is_relative_to_the_config_file(tmp_path: Path) -> None:
    nested = tmp_path / "configs"
    nested.mkdir()
    (tmp_path / "runs.csv").write_text(CSV)
    path = nested / "replay.yaml"
    path.write_text(yaml.safe_dump({"table": table(file="../runs.csv")}))

    actuator = ReplayActuator(ReplayParameters(config=path))

    assert actuator.catalog()[0].required_properties == ("model",)


def test_an_environment_variable_in_a_path_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAY_TABLES", str(tmp_path))

    actuator = build(tmp_path, {"table": table(file="${REPLAY_TABLES}/runs.csv")})

    assert actuator.catalog()[0].target_properties == ("tokens",)


def test_an_unset_variable_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_FOLDER", raising=False)
    with pytest.raises(SpecError, match=r"table\.file: .*NO_SUCH_FOLDER.* is not set"):
        build(tmp_path, {"table": table(file="${NO_SUCH_FOLDER}/runs.csv")})


def test_an_unknown_field_is_named_with_the_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"replay\.yaml: table\.targts: is not a known field"):
        build(tmp_path, {"table": {**table(), "targts": ["x"]}})


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"targets": [{"column": "tokens", "scale": float("nan")}]}, r"targets\[0\]\.scale"),
        ({"targets": [{"column": "tokens", "scale": float("inf")}]}, r"targets\[0\]\.scale"),
        (
            {"properties": [{"column": "model", "default": float("nan")}]},
            r"properties\[0\]\.default",
        ),
    ],
)
def test_a_scale_or_default_that_is_not_a_finite_number_is_refused(
    tmp_path: Path, fields: dict[str, Any], problem: str
) -> None:
    """A NaN scale started, then failed every measurement ('not a finite number'); a NaN
    default went into the catalog as null, which no reader of the announcement accepts."""
    with pytest.raises(SpecError, match=problem):
        build(tmp_path, {"table": table(**fields)})


def test_an_unknown_repeats_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"table\.repeats"):
        build(tmp_path, {"table": table(repeats="first")})


def test_a_column_the_table_lacks_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"table\.targets\[1\]: .*runs\.csv has no column 'memory'"):
        build(tmp_path, {"table": table(targets=["tokens", "memory"])})


def test_a_column_the_table_names_twice_is_refused(tmp_path: Path) -> None:
    """pandas keeps the first and renames the second 'tokens.1': the worker served the first
    without a word, whichever was meant."""
    (tmp_path / "twice.csv").write_text("model,tokens,tokens\nm1,10.0,99.0\n")
    with pytest.raises(SpecError) as raised:
        build(tmp_path, {"table": table(file="twice.csv")})
    assert str(raised.value) == (
        f"table.targets[0]: {tmp_path / 'twice.csv'} names the column 'tokens' more than once "
        "(columns 2, 3): give each column once"
    )


def test_an_absent_table_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nowhere\.csv does not exist"):
        build(tmp_path, {"table": table(file="nowhere.csv")})


def test_a_config_needs_exactly_one_mode(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="exactly one of `table` and `zeus`"):
        build(tmp_path, {"seed": 1})


def test_an_absent_config_file_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"missing\.yaml: no such file"):
        ReplayActuator(ReplayParameters(config=tmp_path / "missing.yaml"))


def test_parameters_give_a_file_or_the_fields_inline_not_both(tmp_path: Path) -> None:
    path = str(config_file(tmp_path, {"table": table()}))
    with pytest.raises(ActuatorConfigError, match=r"either `config`.*not both"):
        load_actuator("replay", {"config": path, "table": table()})
    with pytest.raises(ActuatorConfigError, match="give `config`"):
        load_actuator("replay", {})


def test_a_worker_with_a_bad_replay_config_refuses_to_start_with_one_sentence(
    tmp_path: Path,
) -> None:
    path = config_file(tmp_path, {"table": table(targets=["tokens", "memory"])})
    env = {
        **os.environ,
        "DISCOSPACE_ACTUATOR_ACTUATOR": "replay",
        "DISCOSPACE_ACTUATOR_PARAMETERS": json.dumps({"config": str(path)}),
    }

    finished = subprocess.run(
        [sys.executable, "-m", "discospace.actuator"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode == 2
    assert "Traceback" not in finished.stderr
    assert finished.stderr.strip().splitlines() == [
        "discospace actuator cannot start: "
        f"table.targets[1]: {tmp_path / 'runs.csv'} has no column 'memory'"
    ]
