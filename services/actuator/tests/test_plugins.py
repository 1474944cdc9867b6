"""Actuator plugins are found through the `discospace.actuators` entry points."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from discospace.actuator import plugins
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
