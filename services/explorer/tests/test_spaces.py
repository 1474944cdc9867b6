"""Registered spaces as the explorer uses them."""

from __future__ import annotations

import pytest

from discospace.core import DiscospaceError, Experiment, ExperimentSpec, PropertySpec
from discospace.core.measurement_space import dependency_order
from discospace.explorer.domain.spaces import KnownSpace, known_space


def _experiment(name: str, *needs: str):
    spec = ExperimentSpec(
        actuator="A", experiment=name, target_properties=("t",), required_properties=("x", *needs)
    )
    return Experiment.from_spec(spec).parameterize()


def test_experiments_come_after_those_they_depend_on():
    c, b, a = _experiment("c", "b.t", "a.t"), _experiment("b", "a.t"), _experiment("a")
    assert [e.id for e in dependency_order([c, b, a])] == ["a", "b", "c"]


def test_experiments_that_depend_on_each_other_are_refused():
    with pytest.raises(DiscospaceError, match="'a', 'b' depend on each other in a cycle"):
        dependency_order([_experiment("a", "b.t"), _experiment("b", "a.t")])


def test_a_registered_space_knows_which_experiment_measures_an_objective(dependent_space):
    space = known_space(dependent_space)
    assert isinstance(space, KnownSpace)
    assert space.size == 8
    assert [e.id for e in space.independent] == ["bench"]
    assert space.measures("tps") == ("bench", "tps")
    assert space.measures("energy.joules") == ("energy", "joules")
    assert space.measures("latency") is None


def test_a_bare_target_is_read_from_the_experiment_declared_first_whatever_it_depends_on(
    make_space,
):
    bench = ExperimentSpec(
        actuator="A", experiment="bench", target_properties=("tps",), required_properties=("x",)
    )
    rerun = ExperimentSpec(
        actuator="A",
        experiment="rerun",
        target_properties=("tps",),
        required_properties=("x", "bench.tps"),
    )
    space = known_space(make_space((PropertySpec(name="x", values=(1, 2)),), (rerun, bench)))
    assert isinstance(space, KnownSpace)
    assert [e.id for e in space.experiments] == ["bench", "rerun"]
    assert space.measures("tps") == ("rerun", "tps")
    assert space.measures("bench.tps") == ("bench", "tps")
