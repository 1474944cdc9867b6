import json
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import discospace.client
from discospace.cli.main import app
from discospace.client import ActuatorPool
from discospace.core import ExperimentSpec
from discospace.testing.kafka import free_port

REPO_ROOT = Path(__file__).resolve().parents[3]
SEED_SPACE = REPO_ROOT / "tests" / "data" / "seed-space.yaml"
NOBODY = f"http://127.0.0.1:{free_port()}"
"""A projector URL nothing answers at: describe stays offline whatever runs on this machine."""

runner = CliRunner()


def describe(*args: str, projector: str = NOBODY):
    env = {"COLUMNS": "200", "DISCOSPACE_PROJECTOR_URL": projector}
    return runner.invoke(app, ["space", "describe", *args], env=env)


FINETUNE = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0",
    target_properties=("train_tokens_per_second", "peak_gpu_memory_mib"),
    required_properties=("model_name", "batch_size", "number_gpus"),
    optional_properties={"lora_r": 4},
)


def test_describing_the_seed_space_reports_80_entities_4_categorical_and_3_discrete() -> None:
    result = describe("-f", str(SEED_SPACE))
    assert result.exit_code == 0, result.output
    assert "80 entities; 4 categorical, 3 discrete, 0 continuous, 0 identifier properties" in (
        result.stdout
    )
    assert "Categorical properties (4)" in result.stdout
    assert "Discrete properties (3)" in result.stdout


def test_a_kind_of_property_the_space_lacks_gets_no_empty_table(tmp_path: Path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(
        "sample_store: s\n"
        "entity_space:\n  - {name: batch_size, values: [1, 2]}\n"
        "measurement_space:\n  - {actuator: synthetic, experiment: benchmark}\n"
    )

    result = describe("-f", str(space))

    assert result.exit_code == 0, result.output
    assert "Discrete properties (1)" in result.stdout
    assert "Categorical properties" not in result.stdout


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
    assert "[0.0001, 0.01]" in result.stdout
    assert "lora_r=8" in result.stdout


def _row(stdout: str, name: str) -> list[str]:
    """The cells of the table row that starts with ``name``."""
    line = next(line for line in stdout.splitlines() if line.startswith(f"│ {name} "))
    return [cell.strip() for cell in line.strip("│").split("│")]


def _header(stdout: str, title: str) -> list[str]:
    """The column names of the table titled ``title``."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    line = next(line for line in lines[start:] if line.startswith("┃"))
    return [cell.strip() for cell in line.strip("┃").split("┃")]


def _facts(stdout: str) -> dict[str, str]:
    """The ``label  value`` lines under each experiment (the last experiment wins)."""
    lines = [line.strip() for line in stdout.splitlines() if line.startswith("    ")]
    return dict(re.split(r"\s{2,}", line, maxsplit=1) for line in lines)  # type: ignore[misc]


def test_discrete_properties_show_their_values_or_their_range_and_interval(tmp_path) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(
        "sample_store: s\n"
        "entity_space:\n"
        "  - {name: steps, range: [0, 100], interval: 10}\n"
        "  - {name: batch_size, values: [1, 2, 4]}\n"
        "measurement_space: [{actuator: SFTTrainer, experiment: finetune}]\n"
    )
    result = describe("-f", str(space))
    assert result.exit_code == 0, result.output
    assert _header(result.stdout, "Discrete properties") == [
        "property",
        "values",
        "range",
        "interval",
        "count",
    ]
    assert _row(result.stdout, "steps") == ["steps", "-", "[0, 100)", "10", "10"]
    assert _row(result.stdout, "batch_size") == ["batch_size", "[1, 2, 4]", "-", "-", "3"]

    properties = json.loads(describe("-f", str(space), "--json").stdout)["properties"]
    assert properties[0] | {"domain": None} == {
        "name": "steps", "type": "discrete", "domain": None,
        "values": None, "range": [0, 100], "interval": 10, "size": 10,
    }  # fmt: skip
    assert (properties[1]["values"], properties[1]["range"]) == ([1, 2, 4], None)


def _catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(json.dumps([FINETUNE.model_dump()]))
    return path


def test_describe_with_a_catalog_file_lists_each_experiments_targets_and_needs(tmp_path) -> None:
    result = describe("-f", str(SEED_SPACE), "--catalog", str(_catalog_file(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "  SFTTrainer: finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0\n" in result.stdout
    assert _facts(result.stdout) == {
        "target properties": "train_tokens_per_second, peak_gpu_memory_mib",
        "required properties": "model_name, batch_size, number_gpus",
        "optional properties": "lora_r=4",
    }
    assert f"target properties from {tmp_path / 'catalog.yaml'}" in result.stdout


def test_the_json_description_carries_each_experiments_targets(tmp_path) -> None:
    catalog = _catalog_file(tmp_path)
    summary = json.loads(
        describe("-f", str(SEED_SPACE), "--catalog", str(catalog), "--json").stdout
    )
    assert summary["catalog"] == str(catalog)
    assert summary["experiments"] == [
        {
            "actuator": "SFTTrainer",
            "experiment": "finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0",
            "parameterization": {},
            "experiment_id": "finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0",
            "target_properties": ["train_tokens_per_second", "peak_gpu_memory_mib"],
            "required_properties": ["model_name", "batch_size", "number_gpus"],
            "optional_properties": {"lora_r": 4},
            "problem": None,
        }
    ]


def test_describe_takes_targets_from_the_projectors_catalogs_when_it_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pools = [ActuatorPool(actuator="SFTTrainer", pool="a100", experiments=[FINETUNE])]

    def projector(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/actuators"
        return httpx.Response(200, json=[pool.model_dump(mode="json") for pool in pools])

    real = discospace.client.Client

    class Scripted(real):  # type: ignore[misc,valid-type]
        def __init__(self, base_url: str | None = None, **options: object) -> None:
            super().__init__(base_url, transport=httpx.MockTransport(projector))

    monkeypatch.setattr(discospace.client, "Client", Scripted)
    result = describe("-f", str(SEED_SPACE), projector="http://projector:8105")
    assert result.exit_code == 0, result.output
    assert _facts(result.stdout)["target properties"] == (
        "train_tokens_per_second, peak_gpu_memory_mib"
    )
    assert "target properties from the projector at http://projector:8105" in result.stdout


def test_describe_without_a_catalog_says_where_target_properties_come_from() -> None:
    result = describe("-f", str(SEED_SPACE))
    assert result.exit_code == 0, result.output
    assert _facts(result.stdout) == {"target properties": "?"}
    assert (
        f"target properties: unknown (the projector at {NOBODY} is not answering: start it "
        "with `make up`; give --catalog FILE, a list of experiments)"
    ) in " ".join(result.stdout.split())
    assert json.loads(describe("-f", str(SEED_SPACE), "--json").stdout)["catalog"] is None


def test_describe_says_why_the_projector_gave_no_catalog() -> None:
    """An invalid projector URL was reported as a projector "not answering"."""
    result = describe("-f", str(SEED_SPACE), projector="http://127.0.0.1:70000")
    assert result.exit_code == 0, result.output
    assert (
        "target properties: unknown (the projector URL 'http://127.0.0.1:70000' is not valid: "
        "its port is not a number from 1 to 65535; give --catalog FILE, a list of experiments)"
    ) in " ".join(result.stdout.split())


def test_an_experiment_the_catalog_lacks_is_marked(tmp_path) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text("- {actuator: other, experiment: e, target_properties: [t]}\n")
    result = describe("-f", str(SEED_SPACE), "--catalog", str(catalog))
    lacking = (
        "experiment 'finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0' of actuator "
        "'SFTTrainer' is not in the catalog"
    )
    assert result.exit_code == 2, result.output
    assert _facts(result.stdout) == {"target properties": "?", "problem": lacking}
    assert result.stderr.strip() == (
        f"error: {SEED_SPACE}: the registry would reject this space: {lacking}"
    )


def test_a_space_the_registry_would_reject_is_described_then_refused_with_exit_code_2(
    tmp_path: Path,
) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "- {actuator: A, experiment: e, target_properties: [t], required_properties: [zzz]}\n"
    )
    needs = tmp_path / "needs.yaml"
    needs.write_text(
        "sample_store: s\nentity_space: [{name: a, values: [1, 2]}]\n"
        "measurement_space: [{actuator: A, experiment: e}]\n"
    )
    empty = tmp_path / "empty.yaml"
    empty.write_text("sample_store: s\nentity_space: [{name: a, values: [1, 2]}]\n"
                     "measurement_space: []\n")  # fmt: skip

    lacks = describe("-f", str(needs), "--catalog", str(catalog))
    as_json = describe("-f", str(needs), "--catalog", str(catalog), "--json")
    nothing = describe("-f", str(empty))  # no catalog answers: the shape alone is checked

    assert lacks.exit_code == 2, lacks.output
    assert "Experiments (1)" in lacks.stdout
    assert "requires property 'zzz'" in lacks.stderr
    assert len(lacks.stderr.strip().splitlines()) == 1
    assert as_json.exit_code == 2
    [problem] = json.loads(as_json.stdout)["problems"]
    assert "requires property 'zzz'" in problem
    assert nothing.exit_code == 2
    assert "has no experiment" in nothing.stderr
    assert "Traceback" not in lacks.output + nothing.output


def test_the_client_loads_pandas_only_for_tables() -> None:
    check = "import sys, discospace.client; assert 'pandas' not in sys.modules"
    assert (
        subprocess.run([str(REPO_ROOT / ".venv" / "bin" / "python"), "-c", check]).returncode == 0
    )


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
