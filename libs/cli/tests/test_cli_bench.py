"""`discospace bench optimizers` without the benchmarks package, and a CLI that needs no service.

The benchmarks themselves (and the command running them) are tested in `benchmarks/optimizers`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.cli.errors import nearest_existing
from discospace.cli.main import app

REPO = Path(__file__).resolve().parents[3]
NOT_LOADED = tuple(str(REPO / folder) for folder in ("services", "benchmarks", "libs/traces"))
LOADED_FILES = (
    "import sys, discospace.cli.main\n"
    "for module in list(sys.modules.values()):\n"
    "    print(getattr(module, '__file__', None) or '-')\n"
)
"""A fresh interpreter importing the CLI (every command) prints the file of every module loaded."""


def test_the_cli_loads_every_command_without_a_service_or_the_benchmarks():
    files = subprocess.run(
        [sys.executable, "-c", LOADED_FILES], capture_output=True, text=True, check=True
    ).stdout.splitlines()

    assert len(files) > 100
    assert [f for f in files if f.startswith(NOT_LOADED)] == []


def test_without_the_benchmarks_package_the_command_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setitem(sys.modules, "discospace.bench", None)

    result = CliRunner().invoke(app, ["bench", "optimizers", "--only", "zeus"])

    assert result.exit_code == 2
    assert "discospace-bench package, which is not installed" in result.output
    assert "pip install -e benchmarks/optimizers" in result.output
    assert "Traceback" not in result.output


def test_the_bench_help_needs_no_benchmarks_package(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "discospace.bench", None)

    result = CliRunner().invoke(app, ["bench", "optimizers", "--help"])

    assert result.exit_code == 0
    assert "--only" in result.output


def test_the_nearest_existing_folder_above_a_name_too_long_for_the_file_system_is_found(
    tmp_path: Path,
):
    assert nearest_existing(tmp_path / ("a" * 300) / "results") == tmp_path
