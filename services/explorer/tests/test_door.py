"""`start_problem`: the explorer's start check, applied by a client before it publishes."""

from __future__ import annotations

import pytest

from discospace.explorer.door import start_problem

from .conftest import SMALL, request, space_registered
from .test_zeus_operator import PROPERTIES, RUN

SPACE = space_registered(SMALL)
OBJECTIVE = {"property": "tps", "direction": "max"}


@pytest.mark.parametrize(
    ("asked", "sentence"),
    [
        (
            request(SPACE, operator="optuna_tpe", objective=OBJECTIVE, options={"n_trials": 3}),
            "optuna_tpe has no option 'n_trials' (its options: warm_start,",
        ),
        (
            request(
                SPACE, operator="optuna_tpe", objective=OBJECTIVE, options={"warm_start": "yes!"}
            ),
            "option 'warm_start' of optuna_tpe is not valid",
        ),
        (
            request(SPACE, operator="optuna_tpe", objective=OBJECTIVE, options={"candidates": []}),
            "option 'candidates' of optuna_tpe is not valid",
        ),
        (
            request(
                SPACE, operator="optuna_tpe", objective=OBJECTIVE, options={"population_size": 8}
            ),
            "optuna_tpe does not use option 'population_size' (only optuna_nsga2 uses it)",
        ),
        (
            request(SPACE, operator="optuna_gp", objective=OBJECTIVE, options={"multivariate": 0}),
            "optuna_gp does not use option 'multivariate' (only optuna_tpe uses it)",
        ),
        (
            request(
                SPACE, operator="optuna_nsga2", objective=OBJECTIVE, options={"n_startup_trials": 4}
            ),
            "optuna_nsga2 does not use option 'n_startup_trials' (only optuna_tpe, optuna_gp, "
            "optuna_cmaes use it)",
        ),
        (request(SPACE, operator="nope"), "operator 'nope' is not known: use "),
        (request(SPACE, stopping={"max_duration": "-5sec"}), "max_duration must be above zero"),
    ],
)
def test_what_the_explorer_refuses_at_start_is_named(asked, sentence: str) -> None:
    problem = start_problem(asked, SPACE)
    assert problem is not None
    assert problem.startswith(sentence), problem


def test_zeus_options_are_checked_as_the_explorer_checks_them() -> None:
    space = space_registered(PROPERTIES, (RUN,))

    def zeus(options: dict[str, object], single_measurement: bool = False) -> str | None:
        asked = request(
            space, operator="zeus_bso", options=options, single_measurement=single_measurement
        )
        return start_problem(asked, space)

    assert zeus({"default_batch_size": 16}) is None
    for problem, sentence in [
        (zeus({"default_batch_size": 16, "eta": 7}), "zeus_bso option 'eta': "),
        (zeus({}), "zeus_bso option 'default_batch_size': Field required"),
        (zeus({"default_batch_size": 16, "betta": 2}), "zeus_bso option 'betta': "),
        (zeus({"default_batch_size": 16}, True), "zeus_bso measures repeated runs of one job"),
    ]:
        assert problem is not None
        assert problem.startswith(sentence), problem


def test_a_request_the_explorer_accepts_passes() -> None:
    asked = request(
        SPACE, operator="optuna_tpe", objective=OBJECTIVE, options={"warm_start": False}
    )
    assert start_problem(asked, SPACE) is None
