import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.cli.main import app

REPO_ROOT = Path(__file__).resolve().parents[3]
SEED_SPACE = REPO_ROOT / "examples" / "seed-space.yaml"

runner = CliRunner()


def describe(*args: str):
    return runner.invoke(app, ["space", "describe", *args], env={"COLUMNS": "160"})


def test_describing_the_seed_space_reports_80_entities_4_categorical_and_3_discrete() -> None:
    result = describe("-f", str(SEED_SPACE))
    assert result.exit_code == 0, result.output
    assert "80 entities; 4 categorical, 3 discrete, 0 continuous, 0 identifier properties" in (
        result.stdout
    )
    assert "Categorical properties (4)" in result.stdout
    assert "Discrete properties (3)" in result.stdout


def test_the_description_lists_values_and_experiments() -> None:
    result = describe("--file", str(SEED_SPACE))
    for text in (
        "[1, 2, 4, 8, 16, 32, 64, 128]",
        "[512, 1024, 2048, 4096, 8192]",
        "[NVIDIA-A100-80GB-PCIe]",
        "SFTTrainer",
        "finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0",
    ):
        assert text in result.stdout


def test_the_json_description_carries_the_same_counts() -> None:
    result = describe("-f", str(SEED_SPACE), "--json")
    summary = json.loads(result.stdout)
    assert summary["entities"] == 80
    assert summary["property_counts"] == {
        "categorical": 4,
        "discrete": 3,
        "continuous": 0,
        "identifier": 0,
    }
    assert summary["id"].startswith("space-")
    assert summary["experiments"][0]["actuator"] == "SFTTrainer"


def test_ranges_and_uncountable_properties_are_described(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(
        "sample_store: s\n"
        "entity_space:\n"
        "  - {name: steps, range: [0, 100], interval: 10}\n"
        "  - {name: lr, range: [0.0001, 0.01]}\n"
        "  - {name: run, type: identifier}\n"
        "measurement_space:\n"
        "  - {actuator: A, experiment: e, parameterization: {lora_r: 8}}\n"
    )
    result = describe("-f", str(space))
    assert result.exit_code == 0, result.output
    assert "infinitely many entities; 0 categorical, 1 discrete, 1 continuous, 1 identifier" in (
        result.stdout
    )
    assert "[0, 100) step 10" in result.stdout
    assert "[0.0001, 0.01]" in result.stdout
    assert "lora_r=8" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (
            "sample_store: s\nentity_space: [{name: a, values: []}]\nmeasurement_space: []",
            "property 'a' has no values",
        ),
        (
            "sample_store: s\nentity_space: [{name: a, valuez: [1]}]\nmeasurement_space: []",
            "valuez: is not a known field",
        ),
        ("a: [", "line"),
    ],
)
def test_a_bad_file_gives_one_line_and_exit_code_2(tmp_path: Path, content, message) -> None:
    path = tmp_path / "bad.yaml"
    if content is not None:
        path.write_text(content)
    result = describe("-f", str(path))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert message in lines[0]
    assert "Traceback" not in result.output


def test_the_installed_console_command_works_offline() -> None:
    command = shutil.which("discospace", path=str(REPO_ROOT / ".venv" / "bin"))
    if command is None:
        pytest.skip("the discospace console script is not installed in .venv/bin")
    ok = subprocess.run(
        [command, "space", "describe", "-f", str(SEED_SPACE)], capture_output=True, text=True
    )
    assert ok.returncode == 0
    assert "80 entities" in ok.stdout
    bad = subprocess.run(
        [command, "space", "describe", "-f", "/nonexistent/space.yaml"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: /nonexistent/space.yaml: no such file"
