"""Actuator plugins are found through the `discospace.actuators` entry points."""

from __future__ import annotations

import re
from typing import ClassVar

import pytest
from pydantic import BaseModel

from discospace.actuator import plugins
from discospace.actuator.plugin import is_isolated
from discospace.actuator.plugins import ActuatorConfigError, installed_plugins, load_actuator
from discospace.actuator.synthetic import SyntheticActuator
from discospace.core import ExperimentSpec


def test_the_synthetic_actuator_is_installed_as_an_entry_point():
    assert installed_plugins()["synthetic"].load() is SyntheticActuator


def test_a_plugin_is_built_from_its_validated_parameters():
    actuator = load_actuator("synthetic", {"latency_s": 0.5, "experiments": [{"experiment": "x"}]})

    assert isinstance(actuator, SyntheticActuator)
    assert actuator.parameters.latency_s == 0.5
    assert [spec.experiment for spec in actuator.catalog()] == ["x"]


def test_an_unknown_plugin_is_refused_naming_those_installed():
    with pytest.raises(ActuatorConfigError, match=r"No actuator plugin is named 'gpu'.*synthetic"):
        load_actuator("gpu")


def test_bad_parameters_are_refused_in_one_sentence_naming_the_field():
    with pytest.raises(ActuatorConfigError) as caught:
        load_actuator("synthetic", {"failure_rate": 2})

    assert str(caught.value) == (
        "Parameters of actuator 'synthetic': failure_rate: Input should be less than or equal to 1."
    )


@pytest.mark.parametrize(
    ("parameters", "field"),
    [({"latency_s": "inf"}, "latency_s"), ({"invalid_when": {"above": float("nan")}}, "above")],
)
def test_a_number_that_is_not_finite_is_refused_naming_the_field(
    parameters: dict[str, object], field: str
) -> None:
    with pytest.raises(ActuatorConfigError) as caught:
        load_actuator("synthetic", parameters)

    assert field in str(caught.value)
    assert str(caught.value).endswith("Input should be a finite number.")


class _Impostor:
    """A plugin whose catalog names another actuator."""

    name = "impostor"

    class Parameters(BaseModel):
        pass

    def __init__(self, parameters: BaseModel) -> None:
        self.parameters = parameters

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        return (ExperimentSpec(actuator="other", experiment="x", target_properties=("t",)),)

    async def measure(self, task):  # pragma: no cover - never called
        raise NotImplementedError


class _Point:
    def load(self):
        return _Impostor


def test_a_plugin_offering_experiments_under_another_name_is_refused(monkeypatch):
    monkeypatch.setattr(plugins, "installed_plugins", lambda: {"impostor": _Point()})

    with pytest.raises(ActuatorConfigError, match="under another actuator's name, 'other'"):
        load_actuator("impostor")


class _Broken:
    """An installed entry point whose module cannot load (a dependency missing, a typo)."""

    value = "badplug:NoSuchClass"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def load(self):
        raise self.error


@pytest.mark.parametrize(
    ("error", "why"),
    [
        (ModuleNotFoundError("No module named 'torchx'"), "No module named 'torchx'"),
        (AttributeError("no attribute 'NoSuch'"), "no attribute 'NoSuch'"),
        (RuntimeError("CUDA driver too old"), "RuntimeError: CUDA driver too old"),
    ],
    ids=["missing-dependency", "no-such-class", "raises-at-import"],
)
def test_an_entry_point_that_cannot_load_is_refused_in_one_sentence(monkeypatch, error, why):
    """The same fault named as `module:Class` was one sentence; through the documented entry
    point it stopped the worker with a traceback (and any other error at import still did)."""
    monkeypatch.setattr(plugins, "installed_plugins", lambda: {"bad": _Broken(error)})

    with pytest.raises(ActuatorConfigError) as refused:
        load_actuator("bad")

    assert str(refused.value) == (
        f"Actuator plugin 'bad' (entry point badplug:NoSuchClass) cannot be loaded ({why})."
    )


def test_a_plugin_that_is_no_entry_point_is_loaded_as_module_and_class():
    actuator = load_actuator("isolation_plugins:ChildPlugin", {"allocate_mb": 8})

    assert actuator.name == "child-test"
    assert is_isolated(actuator)
    assert actuator.parameters.allocate_mb == 8


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("no_such_module:Plugin", "Actuator plugin 'no_such_module:Plugin' cannot be imported"),
        ("isolation_plugins:Missing", "names no plugin class (one with `Parameters`)"),
        (".relative:Plugin", "Actuator plugin '.relative:Plugin' names no module: give an "),
        (":", "Actuator plugin ':' names no module: give an absolute module:Class."),
    ],
)
def test_a_module_and_class_that_name_no_plugin_are_refused(reference, problem):
    with pytest.raises(ActuatorConfigError, match=re.escape(problem)):
        load_actuator(reference)


def test_a_plugin_module_with_a_syntax_error_is_refused_in_one_sentence(tmp_path, monkeypatch):
    """A plugin under development (`module:Class`): only an ImportError was one sentence, a
    syntax error stopped the worker with a traceback."""
    (tmp_path / "half_written.py").write_text("class Plugin\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(ActuatorConfigError) as refused:
        load_actuator("half_written:Plugin")

    assert str(refused.value).startswith(
        "Actuator plugin 'half_written:Plugin' cannot be imported (SyntaxError: "
    )


class _Careless(_Impostor):
    """Isolated, but without measure_blocking."""

    name = "careless"
    isolated: ClassVar[bool] = True

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        return ()


class _Forgetful(_Careless):
    """Isolated with measure_blocking, but keeps no parameters to be rebuilt from."""

    def __init__(self, parameters: BaseModel) -> None:
        pass

    def measure_blocking(self, task):  # pragma: no cover - never called
        raise NotImplementedError


@pytest.mark.parametrize(
    ("plugin", "problem"),
    [
        (_Careless, "is isolated but has no measure_blocking(task) method"),
        (_Forgetful, "is isolated but keeps no `parameters` model"),
    ],
)
def test_an_isolated_plugin_the_worker_cannot_rebuild_in_a_child_is_refused(
    monkeypatch, plugin, problem
):
    class Point:
        def load(self):
            return plugin

    monkeypatch.setattr(plugins, "installed_plugins", lambda: {"p": Point()})

    with pytest.raises(ActuatorConfigError, match=re.escape(problem)):
        load_actuator("p")


async def test_a_property_the_entity_holds_wins_over_the_experiments_option_of_that_name() -> None:
    """The synthetic actuator reads `task.properties`: its `steps` option (10) used to win
    over an entity's own `steps`, so every value of an explored `steps` measured the same."""
    from discospace.actuator.plugin import MeasurementTask
    from discospace.core import Entity, Experiment

    actuator = SyntheticActuator()
    experiment = Experiment.from_spec(actuator.catalog()[0]).parameterize({})
    assert experiment.option_values == {"steps": 10}

    def task(steps: int) -> MeasurementTask:
        point = {"batch_size": 8, "model_max_length": 1024, "steps": steps}
        return MeasurementTask("req-1", Entity.of(point), experiment)

    assert task(1000).properties["steps"] == 1000
    short, long = await actuator.measure(task(10)), await actuator.measure(task(1000))
    assert short.values != long.values  # type: ignore[union-attr]
    without = MeasurementTask("req-1", Entity.of({"batch_size": 8}), experiment)
    assert without.properties["steps"] == 10  # the option, where the entity has none


@pytest.mark.parametrize(
    ("experiments", "sentence"),
    [
        (
            [{"experiment": "b", "optional_properties": {"x": float("nan")}}],
            "The catalog of actuator 'synthetic' is not valid: optional_properties.x: Input "
            "should be a finite number.",
        ),
        (
            [{"experiment": "b"}, {"experiment": "b"}],
            "Actuator 'synthetic' offers experiment 'b' twice.",
        ),
        (  # read as a service setting before ("setting target_properties.0: ...")
            [{"experiment": "b", "target_properties": [""]}],
            "The catalog of actuator 'synthetic' is not valid: target_properties.0: String should "
            "have at least 1 character.",
        ),
    ],
)
def test_a_catalog_its_readers_would_refuse_or_misread_is_refused_at_start(experiments, sentence):
    """NaN is written as null, which no reader of the actuators topic accepts; a second entry of
    one experiment would replace the first in every catalog."""
    with pytest.raises(ActuatorConfigError) as refused:
        load_actuator("synthetic", {"experiments": experiments})
    assert str(refused.value) == sentence
