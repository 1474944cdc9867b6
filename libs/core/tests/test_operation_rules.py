"""The request rules the explorer and the CLI share (discospace.core.operation_rules)."""

from dataclasses import dataclass, field
from typing import Any

import pytest

from discospace.core import Time, parse_space_spec
from discospace.core.loading import discovery_space_from_spec
from discospace.core.operation_rules import (
    objectives_problem,
    operator_problem,
    random_walk_problem,
    stopping_problem,
    unmeasured_objective,
    zeus_space_problem,
)
from discospace.core.results import Objective

SPACE = """sample_store: s
entity_space:
  - {name: x, values: [1, 2]}
  - {name: y, values: [a, b]}
measurement_space:
  - {actuator: a, experiment: e}
"""


@dataclass
class Rules:
    max_duration: Time | None = None
    max_measurement_time: Time | None = None
    max_training: Time | None = None


@dataclass
class Walk:
    number_entities: int | str = 10
    options: dict[str, Any] = field(default_factory=dict)
    sampler: str = "random"
    group_by: tuple[str, ...] = ()


def entity_space():
    return discovery_space_from_spec(parse_space_spec(SPACE), "s").entity_space


def test_an_unknown_operator_is_named_with_the_known_ones() -> None:
    assert operator_problem("random_walk") is None
    problem = operator_problem("rändom")
    assert problem is not None
    assert problem.startswith("operator 'rändom' is not known: use ")
    assert "random_walk" in problem


@pytest.mark.parametrize(
    ("rules", "sentence"),
    [
        (Rules(max_duration=Time.parse("-5sec")), "max_duration must be above zero, not -5sec"),
        (Rules(max_duration=Time.parse("0sec")), "max_duration must be above zero, not 0sec"),
        (Rules(max_duration=Time.parse("3ep")), "max_duration must be a wall-clock time"),
        (Rules(max_measurement_time=Time.parse("-1sec")), "max_measurement_time must be a posit"),
        (Rules(max_measurement_time=Time.parse("0.5dur")), "max_measurement_time 0.5dur is a"),
        (Rules(max_training=Time.parse("-3ep")), "max_training must be above zero"),
        (
            Rules(max_duration=Time.parse("36501d")),
            "max_duration must be at most 100 years (36500d), not 3153686400sec",
        ),
        (Rules(max_duration=Time.parse("1e18sec")), "max_duration must be at most 100 years"),
    ],
)
def test_stopping_rules_must_be_valid_and_positive(rules: Rules, sentence: str) -> None:
    problem = stopping_problem(rules)
    assert problem is not None
    assert problem.startswith(sentence)


def test_valid_stopping_rules_pass() -> None:
    rules = Rules(Time.parse("2h"), Time.parse("0.5dur"), Time.parse("3ep"))
    assert stopping_problem(rules) is None
    assert stopping_problem(Rules(max_duration=Time.parse("36500d"))) is None


def test_an_objective_no_experiment_measures_is_named() -> None:
    observed = ("e.tps",)
    assert unmeasured_objective(["tps", None], observed, "sp") is None
    assert unmeasured_objective(["tps", "mem"], observed, "sp") == (
        "the objective 'mem' is not measured by any experiment of space 'sp'"
    )


def test_random_walk_refuses_options_and_unknown_group_by() -> None:
    space = entity_space()
    assert random_walk_problem(Walk(), space, "sp") is None
    assert random_walk_problem(Walk(options={"k": 1}), space, "sp") == (
        "random_walk takes no options, but was given k"
    )
    problem = random_walk_problem(Walk(sampler="grouped", group_by=("nope",)), space, "sp")
    assert problem is not None
    assert problem.startswith("the grouped sampler cannot run")


def test_optimizers_need_an_objective_and_cmaes_takes_only_one() -> None:
    assert objectives_problem("random_walk", 0) is None
    assert objectives_problem("optuna_tpe", 2) is None
    assert objectives_problem("optuna_tpe", 0) == (
        "optuna_tpe needs an objective: set parameters.objective (or parameters.objectives for two)"
    )
    assert objectives_problem("optuna_cmaes", 2) == (
        "optuna_cmaes optimises one objective, but 2 were given"
    )


def test_an_objective_the_optimizers_objectives_name_in_the_other_direction_is_refused() -> None:
    """The optimizer searched for the smallest tps while the operation reported, and stopped
    on, the largest."""
    most, least = (
        Objective(property="tps", direction="max"),
        Objective(property="tps", direction="min"),
    )
    memory = Objective(property="mem", direction="min")
    assert objectives_problem("optuna_nsga2", 2, None, most, (least, memory)) == (
        "the objective 'tps' is to maximise, but objectives minimise it: give one direction"
    )
    assert objectives_problem("optuna_nsga2", 2, None, most, (most, memory)) is None
    assert objectives_problem("random_walk", 1, None, most, (least,)) is None  # it optimises none


def test_zeus_needs_batch_sizes_power_limits_recurrences_and_one_workload() -> None:
    text = """sample_store: s
entity_space:
  - {name: batch_size, values: [8, 16]}
  - {name: power_limit, values: [200, 300]}
  - {name: recurrence, range: [0, 100], interval: 1}
  - {name: model, values: [m]}
measurement_space:
  - {actuator: a, experiment: e}
"""
    good = discovery_space_from_spec(parse_space_spec(text), "s").entity_space
    assert zeus_space_problem(good) is None
    assert zeus_space_problem(entity_space()) == (
        "zeus_bso needs a 'batch_size' property in the entity space"
    )
    no_power = text.replace("  - {name: power_limit, values: [200, 300]}\n", "")
    space = discovery_space_from_spec(parse_space_spec(no_power), "s").entity_space
    assert (
        zeus_space_problem(space) == "zeus_bso needs a 'power_limit' property in the entity space"
    )


def test_objectives_left_in_the_options_are_named_as_such() -> None:
    """Three objectives in options.objectives (the objectives field takes two) stay there:
    the operator said it had no objective at all."""
    from discospace.core.operation_rules import objectives_problem

    three = {"objectives": [{"property": p} for p in ("a", "b", "c")]}
    assert objectives_problem("optuna_nsga2", 0, three) == (
        "optuna_nsga2 takes its objectives as parameters.objectives (one or two, each "
        "{property, direction}), not as options.objectives, which holds something else"
    )
    assert objectives_problem("random_walk", 0, three) is None
