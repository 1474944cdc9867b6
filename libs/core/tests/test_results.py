"""The rules about an operation's results: source, value, better, reached, front, give-up."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from discospace.core import (
    Objective,
    ObjectiveSource,
    as_number,
    gives_up,
    objective_points,
    objective_source,
    pareto_front,
    result_value,
    target_of,
)

DECLARED = ("bench.tps", "bench.mem", "profile.tps", "profile.joules")
"""Observed property ids of a space declaring `bench` before `profile`."""
MAX = Objective(property="tps", direction="max")
MIN = Objective(property="joules", direction="min")


@dataclass(frozen=True)
class Result:
    entity_id: str
    experiment_id: str
    is_valid: bool = True
    values: dict[str, Any] = field(default_factory=dict)


def test_a_bare_target_is_read_from_the_first_experiment_declared_that_measures_it() -> None:
    assert objective_source("tps", DECLARED) == ObjectiveSource("bench", "tps")
    assert objective_source("tps", tuple(reversed(DECLARED))) == ("profile", "tps")
    assert objective_source("joules", DECLARED) == ("profile", "joules")


def test_an_observed_property_id_names_its_experiment() -> None:
    assert objective_source("profile.tps", DECLARED) == ("profile", "tps")


def test_a_property_no_experiment_of_the_space_measures_has_no_source() -> None:
    assert objective_source("latency", DECLARED) is None
    assert objective_source("energy.tps", DECLARED) is None


def test_without_the_space_only_an_observed_property_id_can_be_placed() -> None:
    assert objective_source("profile.tps", None) == ("profile", "tps")
    assert objective_source("tps", None) is None


def test_the_target_of_a_property_is_the_part_after_its_experiment() -> None:
    assert (target_of("tps"), target_of("finetune-max_steps.10.tps")) == ("tps", "tps")


@pytest.mark.parametrize(
    ("raw", "number"),
    [
        (3, 3.0),
        (2.5, 2.5),
        (True, None),
        ("3", None),
        (None, None),
        (math.nan, None),
        (2**63 - 1, float(2**63 - 1)),
        (-(2**63), float(-(2**63))),
        (2**63, None),  # beyond 64 bits: the store's JSON reads it as no number (`UInt64`)
        (2**64, None),
        (-(2**63) - 1, None),
    ],
)
def test_only_a_finite_number_that_is_not_a_boolean_is_a_value(raw: Any, number: Any) -> None:
    assert as_number(raw) == number
    assert as_number(math.inf) is None


def test_a_result_has_a_value_only_when_valid_and_of_the_source_experiment() -> None:
    source = ObjectiveSource("bench", "tps")

    assert result_value(Result("e1", "bench", True, {"tps": 200}), source) == 200.0
    assert result_value(Result("e1", "profile", True, {"tps": 900}), source) is None
    assert result_value(Result("e1", "bench", False, {"tps": 200}), source) is None
    assert result_value(Result("e1", "bench", True, {"mem": 3}), source) is None


def test_the_first_result_to_reach_a_value_stays_the_best() -> None:
    assert [MAX.improves(v, best) for v, best in [(2.0, None), (3.0, 2.0), (2.0, 2.0)]] == [
        True,
        True,
        False,
    ]
    assert not MAX.improves(None, 2.0)
    assert [MIN.improves(1.0, 2.0), MIN.improves(3.0, 2.0)] == [True, False]


def test_a_target_is_reached_by_a_best_at_least_as_good() -> None:
    assert [MAX.reached(best, 5.0) for best in (5.0, 6.0, 4.0, None)] == [True, True, False, False]
    assert [MIN.reached(best, 5.0) for best in (4.0, 6.0)] == [True, False]


def test_an_objective_refuses_an_unknown_direction_and_an_empty_property() -> None:
    with pytest.raises(ValidationError):
        Objective(property="tps", direction="up")
    with pytest.raises(ValidationError):
        Objective(property="", direction="max")


def test_a_point_joins_an_entitys_results_of_every_objectives_experiment() -> None:
    sources = (ObjectiveSource("bench", "tps"), ObjectiveSource("profile", "joules"))
    results = [
        Result("e1", "bench", True, {"tps": 200}),
        Result("e2", "profile", True, {"joules": 20}),
        Result("e2", "bench", False),
        Result("e1", "profile", True, {"joules": 50}),
        Result("e1", "profile", True, {"joules": 1}),
        Result("e3", "bench", True, {"tps": 10}),
    ]

    points = objective_points(results, sources)

    assert [(p.entity_id, p.values) for p in points] == [("e2", None), ("e1", (200.0, 50.0))]
    assert [r.experiment_id for r in points[1].results] == ["bench", "profile"]


def test_a_point_whose_dependent_objective_will_never_run_is_infeasible_when_it_is_known() -> None:
    """`energy` reads `bench.tps` and `carbon` reads `energy.joules`: an entity whose `bench`
    gave no valid `tps` never gets either (the explorer skips them), so it is infeasible as
    soon as that result is read; before, it never made a point (an optimizer held it in flight
    for good, and its warm start asked for it again)."""
    needs = {
        "energy": (ObjectiveSource("bench", "tps"),),
        "carbon": (ObjectiveSource("energy", "joules"),),
    }
    sources = (ObjectiveSource("carbon", "grams"),)
    results = [
        Result("valid", "bench", True, {"tps": 5}),
        Result("oom", "bench", False),
        Result("no-tps", "bench", True, {"mem": 3}),
        Result("no-joules", "bench", True, {"tps": 1}),
        Result("no-joules", "energy", True, {"watts": 1}),
        Result("oom", "bench", False),  # a second copy adds no point
        Result("valid", "energy", True, {"joules": 2}),
        Result("valid", "carbon", True, {"grams": 7}),
    ]

    points = objective_points(results, sources, needs)

    assert [(p.entity_id, p.values) for p in points] == [
        ("oom", None),
        ("no-tps", None),
        ("no-joules", None),
        ("valid", (7.0,)),
    ]
    assert [p.results[0].experiment_id for p in points] == ["bench", "bench", "energy", "carbon"]
    assert [p.entity_id for p in objective_points(results, sources)] == ["valid"]


def test_a_result_an_objective_does_not_read_through_blocks_nothing() -> None:
    needs = {"energy": (ObjectiveSource("bench", "tps"),)}
    sources = (ObjectiveSource("bench", "tps"), ObjectiveSource("profile", "mem"))
    results = [Result("e1", "bench", False), Result("e1", "profile", True, {"mem": 1})]

    points = objective_points(results, sources, needs)

    assert [(p.entity_id, p.values) for p in points] == [("e1", None)]
    assert [r.experiment_id for r in points[0].results] == ["bench", "profile"]


def test_two_objectives_of_one_experiment_make_a_point_of_each_result() -> None:
    sources = (ObjectiveSource("bench", "tps"), ObjectiveSource("bench", "mem"))
    results = [Result("e1", "bench", True, {"tps": 2, "mem": 3})]

    assert [p.values for p in objective_points(results, sources)] == [(2.0, 3.0)]


def test_the_front_holds_the_points_no_other_beats_on_both_along_the_first() -> None:
    points = [(3.0, 30.0), (2.0, 10.0), (5.0, 50.0), (4.0, 60.0)]

    assert pareto_front(points, (MAX, MIN)) == [1, 0, 2]
    assert pareto_front(points, (MAX, Objective(property="x", direction="max"))) == [3, 2]


def test_equal_points_are_on_the_front_together() -> None:
    assert pareto_front([(1.0, 1.0), (1.0, 1.0), (0.0, 0.0)], (MAX, MAX)) == [0, 1]


@pytest.mark.parametrize(
    ("retryable", "attempt", "max_retries", "final"),
    [
        (False, 1, 2, True),
        (True, 1, 2, False),
        (True, 2, 2, False),
        (True, 3, 2, True),
        # the store keeps an attempt in 16 bits: a later one could not be recorded
        (True, 65_534, 10**6, False),
        (True, 65_535, 10**6, True),
    ],
)
def test_a_failure_is_final_when_it_cannot_be_retried_or_the_retries_are_spent(
    retryable: bool, attempt: int, max_retries: int, final: bool
) -> None:
    assert gives_up(retryable, attempt, max_retries) is final
