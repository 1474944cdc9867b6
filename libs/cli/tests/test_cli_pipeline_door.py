"""``operation create`` with a pipeline: `stages:`/`trials:` at the top of the file travel in
`parameters.options`, and a malformed pipeline is refused with one sentence, nothing published."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from discospace.cli.errors import CliError
from discospace.cli.main import app
from discospace.cli.requests import check_request, load_operation_file, operation_request
from discospace.cli.settings import CliSettings
from discospace.core import ExperimentRef
from discospace.core.errors import SpecError
from discospace.events import OperationRequested, SpaceRegistered, TopicNames

from .conftest import registration

runner = CliRunner()
SPACE = registration(
    "store-a",
    ExperimentRef(actuator="synthetic", experiment="benchmark"),
    ExperimentRef(actuator="synthetic", experiment="warmup"),
)
SID = SPACE.space_id

PROBE = {"name": "probe", "kind": "operation", "operator": "random_walk"}
BEST = {
    "name": "best",
    "kind": "hook",
    "hook": "top_k",
    "args": {"job": "probe", "k": 2, "objective": {"property": "throughput", "direction": "max"}},
}
LONGER = {
    "name": "longer",
    "kind": "measure",
    "entities": "${best.entities}",
    "experiment": {
        "actuator": "synthetic",
        "experiment": "warmup",
        "parameterization": {"steps": 50},
    },
}
TRIALS = {
    "count": 2,
    "optimizer": "random",
    "over": {"batch_size": {"values": [2, 4]}},
    "objective": {"job": "best", "property": "throughput", "direction": "max"},
}


def pipeline_file(tmp_path: Path, **fields: Any) -> Path:
    document = {
        "space_id": SID,
        "operator": "pipeline",
        "stages": {"probe": [PROBE], "evaluate": [BEST, LONGER]},
        "trials": TRIALS,
        **fields,
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in document.items() if v is not None}))
    return path


def request_from(path: Path) -> OperationRequested:
    return operation_request(CliSettings(), load_operation_file(path), None)


def refusal(asked: OperationRequested, space: SpaceRegistered = SPACE) -> str | None:
    async def registered(space_id: str) -> SpaceRegistered:
        if space_id != space.space_id:
            raise CliError(f"space {space_id} is not registered")
        return space

    try:
        asyncio.run(check_request(asked, registered))
    except CliError as error:
        return str(error)
    return None


def test_stages_and_trials_at_the_top_of_the_file_travel_in_the_options(tmp_path: Path) -> None:
    asked = request_from(pipeline_file(tmp_path, parameters={"seed": 7, "options": {"note": 1}}))

    assert asked.operator == "pipeline"
    assert asked.parameters.seed == 7
    assert asked.parameters.options == {
        "note": 1,
        "stages": {"probe": [PROBE], "evaluate": [BEST, LONGER]},
        "trials": TRIALS,
    }


def test_a_well_formed_pipeline_on_its_space_passes_the_door(tmp_path: Path) -> None:
    assert refusal(request_from(pipeline_file(tmp_path))) is None


def test_stages_for_another_operator_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="stages and trials are written only with operator: pipe"):
        load_operation_file(pipeline_file(tmp_path, operator="random_walk"))


def test_stages_written_twice_are_refused(tmp_path: Path) -> None:
    twice = pipeline_file(tmp_path, parameters={"options": {"stages": {}}})
    with pytest.raises(SpecError, match=r"stages is given both at the top and in parameters\.op"):
        load_operation_file(twice)


OFFLINE = [
    (
        {"stages": {"evaluate": [{**BEST, "hook": "top_kk"}]}},
        "hook job 'best' uses hook 'top_kk', which is not known: use k_sigma, prune_invalid, top_k",
    ),
    (
        {"stages": {"probe": [PROBE], "evaluate": [{**LONGER, "entities": "${bset.entities}"}]}},
        "job 'longer' reads job 'bset', which does not exist",
    ),
    (
        {"stages": {"probe": [{**PROBE, "space": "${best.space_id}"}], "evaluate": [BEST]}},
        "job 'probe' reads job 'best', which reads 'probe' back: a cycle",
    ),
    (
        {"stages": {"probe": [{**PROBE, "parameters": {"seed": "${probe.seed}"}}]}},
        "job 'probe' reads its own result: a cycle",
    ),
    (
        {
            "stages": {
                "probe": [{**PROBE, "space": "${late.space_id}"}],
                "execute": [{"name": "late", "kind": "operation", "operator": "random_walk"}],
            }
        },
        "job 'probe' reads job 'late', which runs after it: a job reads earlier jobs only",
    ),
    (
        {"stages": {"probe": [{"name": "probe", "kind": "measure", "entities": []}]}},
        "measure job 'probe' needs experiment",
    ),
    (
        {"stages": {"probe": [{**PROBE, "operator": "random_wlak"}]}},
        "operation job 'probe': operator 'random_wlak' is not known: use ",
    ),
    ({"stages": {}}, "the pipeline has no job: give at least one in stages"),
    (
        {"stages": {"probe": [{**PROBE, "parameters": {"number_entitis": 4}}]}},
        "operation job 'probe': its parameters are not valid: number_entitis: Extra inputs are "
        "not permitted",
    ),
]


@pytest.mark.parametrize(("fields", "sentence"), OFFLINE)
def test_a_malformed_pipeline_is_refused_before_kafka_is_reached(
    tmp_path: Path, fields: dict[str, Any], sentence: str
) -> None:
    path = pipeline_file(tmp_path, trials=None, **fields)

    result = runner.invoke(app, ["--kafka", "127.0.0.1:9", "operation", "create", "-f", str(path)])

    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {sentence}"), line


def test_pipeline_is_an_operator_the_door_knows(tmp_path: Path) -> None:
    problem = refusal(
        request_from(pipeline_file(tmp_path, operator="pipelines", stages=None, trials=None))
    )

    assert problem is not None
    assert problem.startswith("operator 'pipelines' is not known: use ")
    assert "pipeline," in problem or problem.endswith("pipeline")


ON_THE_SPACE = [
    (
        {
            "stages": {
                "probe": [PROBE],
                "evaluate": [
                    BEST,
                    {**LONGER, "experiment": {"actuator": "synthetic", "experiment": "profile"}},
                ],
            }
        },
        f"measure job 'longer' uses experiment 'profile' of actuator 'synthetic', which space "
        f"'{SID}' does not measure: use benchmark (synthetic), warmup (synthetic)",
    ),
    (
        {
            "stages": {
                "probe": [PROBE],
                "evaluate": [
                    BEST,
                    {
                        **LONGER,
                        "experiment": {
                            "actuator": "synthetic",
                            "experiment": "warmup",
                            "parameterization": {"epochs": 2},
                        },
                    },
                ],
            }
        },
        "measure job 'longer': experiment 'warmup' has no optional property 'epochs'",
    ),
    (
        {"trials": {**TRIALS, "over": {"batch_sise": {"values": [2, 4]}}}},
        f"trials are over 'batch_sise', which space '{SID}' does not have: it has batch_size, "
        "model_name",
    ),
    (
        {"trials": {**TRIALS, "over": {"batch_size": {"values": [2, 3]}}}},
        "trials over 'batch_size' give [2, 3], which is not within its domain [1, 2, 4, 8]",
    ),
]


@pytest.mark.parametrize(("fields", "sentence"), ON_THE_SPACE)
def test_a_pipeline_that_does_not_fit_its_registered_space_is_refused(
    tmp_path: Path, fields: dict[str, Any], sentence: str
) -> None:
    asked = request_from(pipeline_file(tmp_path, **fields))

    problem = refusal(asked)

    assert problem is not None
    assert problem.startswith(sentence), problem


@pytest.mark.integration
def test_a_pipeline_refused_on_its_registered_space_publishes_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    from discospace.cli.kafka import ensure_topics, publish

    from .test_cli_operation import read_topic

    topics = TopicNames.unique("cli-pipeline")

    async def register() -> None:
        await ensure_topics(kafka_bootstrap, topics, [topics.spaces])
        await publish(kafka_bootstrap, topics.spaces, SPACE)

    asyncio.run(register())
    trials = {**TRIALS, "over": {"no_such_property": {"values": [1]}}}
    path = pipeline_file(tmp_path, trials=trials)
    args = ["--kafka", kafka_bootstrap, "--topic-prefix", topics.prefix]

    result = runner.invoke(app, [*args, "operation", "create", "-f", str(path)])

    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: trials are over 'no_such_property', which space '{SID}'"), line
    assert read_topic(kafka_bootstrap, topics.operations, 1, timeout_s=2) == []


def test_a_job_naming_a_space_that_is_not_registered_is_refused_at_the_door(
    tmp_path: Path,
) -> None:
    """The explorer found it only when the job's turn came, after the probe had measured (and
    with trials, every trial's probe)."""
    elsewhere = {**PROBE, "name": "elsewhere", "space": "space-8f9f0ffce982"}
    stages = {"probe": [PROBE, elsewhere], "evaluate": [BEST, LONGER]}

    found = refusal(request_from(pipeline_file(tmp_path, stages=stages)))

    assert found == "space space-8f9f0ffce982 is not registered"
    on_its_own = {**PROBE, "name": "again", "space": SID}
    assert (
        refusal(
            request_from(
                pipeline_file(tmp_path, stages={"probe": [PROBE, on_its_own]}, trials=None)
            )
        )
        is None
    )


def test_a_data_juicer_sandbox_config_is_told_how_its_names_map(tmp_path: Path) -> None:
    """It was refused with 'operator: is required (and 6 more problems)', no word of the
    stages a Data-Juicer user knows by other names."""
    path = tmp_path / "sandbox.yaml"
    path.write_text(
        "project_name: demo\nhpo_config: null\n"
        "probe_job_configs: [{hook: ProbeViaAnalyzerHook, meta_name: analysis}]\n"
        "refine_recipe_job_configs: [{hook: RefineRecipeViaKSigmaHook}]\n"
    )

    result = runner.invoke(app, ["operation", "create", "-f", str(path), "--space", SID])

    assert result.exit_code == 2
    line = result.stderr.strip()
    assert line.startswith(
        f"error: {path}: reads as a Data-Juicer sandbox config (probe_job_configs, "
        "refine_recipe_job_configs, hpo_config): discospace runs a pipeline as an operation"
    )
    assert "`trials:` for hpo_config" in line


def test_a_data_juicer_config_of_named_pipelines_is_told_how_its_names_map(
    tmp_path: Path,
) -> None:
    """Data-Juicer also reads `pipelines:`, a list of named pipelines holding the stage keys:
    refused with 'operator: is required (and 3 more problems)'."""
    path = tmp_path / "sandbox.yaml"
    path.write_text(
        "project_name: demo\nwork_dir: ./out\npipelines:\n"
        "  - pipeline_1:\n"
        "      probe_job_configs: [{hook: ProbeViaAnalyzerHook, meta_name: analysis}]\n"
        "      refine_recipe_job_configs: [{hook: RefineRecipeViaKSigmaHook}]\n"
    )

    result = runner.invoke(app, ["operation", "create", "-f", str(path), "--space", SID])

    assert result.exit_code == 2
    assert result.stderr.strip().startswith(
        f"error: {path}: reads as a Data-Juicer sandbox config (pipelines): discospace runs a "
        "pipeline as an operation"
    )
