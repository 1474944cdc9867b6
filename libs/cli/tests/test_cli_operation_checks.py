"""``operation create`` refuses, before publishing anything, what the explorer would refuse."""

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.cli.errors import CliError
from discospace.cli.main import app
from discospace.cli.requests import check_request
from discospace.core import ExperimentRef
from discospace.events import OperationParameters, OperationRequested, SpaceRegistered, new_event

from .conftest import registration

runner = CliRunner()


def request(space_id: str, operator: str = "random_walk", **parameters) -> OperationRequested:
    return new_event(
        OperationRequested,
        operation_id="op-1",
        space_id=space_id,
        operator=operator,
        parameters=OperationParameters.model_validate(parameters),
        requested_by="me",
    )


def refusal(asked: OperationRequested, space: SpaceRegistered | None) -> str | None:
    async def registered(space_id: str) -> SpaceRegistered:
        if space is None or space_id != space.space_id:
            raise CliError(f"space {space_id} is not registered")
        return space

    try:
        asyncio.run(check_request(asked, registered))
    except CliError as error:
        return str(error)
    return None


SPACE = registration()
SID = SPACE.space_id


@pytest.mark.parametrize(
    ("asked", "sentence"),
    [
        (request(SID, "rändom_walk"), "operator 'rändom_walk' is not known: use optuna_cmaes"),
        (request(SID, stopping={"max_duration": "-5sec"}), "max_duration must be above zero"),
        (request(SID, stopping={"max_duration": "3ep"}), "max_duration must be a wall-clock"),
        (request("space-000000000000"), "space space-000000000000 is not registered"),
        (request(SID, "optuna_tpe"), "optuna_tpe needs an objective"),
        (
            request(SID, "zeus_bso", options={"default_batch_size": 4}),
            "zeus_bso needs a 'power_limit' property in the entity space",
        ),
        (
            request(
                SID,
                "optuna_cmaes",
                objectives=[
                    {"property": "throughput", "direction": "max"},
                    {"property": "peak_memory", "direction": "min"},
                ],
            ),
            "optuna_cmaes optimises one objective, but 2 were given",
        ),
        (request(SID, options={"k": 1}), "random_walk takes no options, but was given k"),
        (
            request(
                SID,
                "optuna_tpe",
                objective={"property": "throughput", "direction": "max"},
                options={"n_trials": 3},
            ),
            "optuna_tpe has no option 'n_trials' (its options: ",
        ),
        (
            request(SID, sampler="grouped", group_by=["nope"]),
            "the grouped sampler cannot run on space",
        ),
        (
            request(SID, objective={"property": "accuracy", "direction": "max"}),
            f"the objective 'accuracy' is not measured by any experiment of space '{SID}'",
        ),
    ],
)
def test_a_request_the_explorer_would_refuse_is_refused_with_its_sentence(
    asked: OperationRequested, sentence: str
) -> None:
    problem = refusal(asked, SPACE)
    assert problem is not None
    assert problem.startswith(sentence), problem


def test_a_valid_request_passes() -> None:
    asked = request(
        SID,
        objective={"property": "throughput", "direction": "max"},
        stopping={"max_duration": "2h"},
    )
    assert refusal(asked, SPACE) is None


def test_a_registered_space_the_explorer_cannot_use_is_refused() -> None:
    space = registration("s", ExperimentRef(actuator="synthetic", experiment="missing"))
    problem = refusal(request(space.space_id), space)
    assert problem is not None
    assert problem.startswith(f"space '{space.space_id}' cannot be explored: ")


@pytest.mark.parametrize(
    ("parameters", "sentence"),
    [
        ("{stopping: {max_duration: -5sec}}", "max_duration must be above zero, not -5sec"),
        ("{stopping: {max_duration: 3ep}}", "max_duration must be a wall-clock time"),
    ],
)
def test_the_cli_refuses_before_it_reaches_kafka(tmp_path: Path, parameters, sentence) -> None:
    for operator in ("random_walk", "no_such_operator"):
        file = tmp_path / "op.yaml"
        file.write_text(f"space_id: s\noperator: {operator}\nparameters: {parameters}\n")
        result = runner.invoke(
            app, ["--kafka", "127.0.0.1:9", "operation", "create", "-f", str(file)]
        )
        assert result.exit_code == 2
        [line] = result.stderr.strip().splitlines()
        wanted = sentence if operator == "random_walk" else "operator 'no_such_operator' is not"
        assert line.startswith(f"error: {wanted}"), line


@pytest.mark.parametrize("given", ["-3", "many"])
def test_a_bad_number_of_entities_names_both_forms_it_may_take(tmp_path: Path, given) -> None:
    file = tmp_path / "op.yaml"
    file.write_text(
        f"space_id: s\noperator: random_walk\nparameters: {{number_entities: {given}}}\n"
    )
    result = runner.invoke(app, ["--kafka", "127.0.0.1:9", "operation", "create", "-f", str(file)])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {file}: parameters.number_entities: input should be"), line
    assert line.endswith(", or input should be 'all'"), line
    assert "constrained-int" not in line
