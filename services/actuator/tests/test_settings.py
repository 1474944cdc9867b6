"""An actuator worker's settings, from the environment and a parameters file."""

from __future__ import annotations

import pytest

from discospace.actuator.settings import ActuatorSettings
from discospace.core.errors import SpecError


def test_a_worker_runs_the_synthetic_actuator_on_the_default_pool_unless_told_otherwise(
    monkeypatch,
):
    for name in ("ACTUATOR", "POOL", "PARAMETERS", "GPU_MODEL", "CONCURRENCY"):
        monkeypatch.delenv(f"DISCOSPACE_ACTUATOR_{name}", raising=False)

    settings = ActuatorSettings()

    assert (settings.actuator, settings.pool, settings.concurrency) == ("synthetic", "default", 1)
    assert settings.gpu_model is None
    assert settings.plugin_parameters() == {}
    assert settings.consumer_group == "discospace.actuator.default"


def test_parameters_come_as_json_from_the_environment(monkeypatch):
    monkeypatch.setenv("DISCOSPACE_ACTUATOR_PARAMETERS", '{"latency_s": 0.5, "seed": 2}')
    monkeypatch.setenv("DISCOSPACE_ACTUATOR_GPU_MODEL", "NVIDIA-A100-80GB-PCIe")

    settings = ActuatorSettings()

    assert settings.plugin_parameters() == {"latency_s": 0.5, "seed": 2}
    assert settings.gpu_model == "NVIDIA-A100-80GB-PCIe"


def test_parameters_of_a_file_are_overridden_by_those_of_the_environment(tmp_path):
    path = tmp_path / "synthetic.yaml"
    path.write_text("latency_s: 1.5\nfailure_rate: 0.2\n", encoding="utf-8")

    settings = ActuatorSettings(parameters_file=path, parameters={"latency_s": 0})

    assert settings.plugin_parameters() == {"latency_s": 0, "failure_rate": 0.2}


def test_a_parameters_file_that_is_missing_or_not_a_mapping_is_refused_in_a_sentence(tmp_path):
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n", encoding="utf-8")

    with pytest.raises(SpecError, match="cannot be read"):
        ActuatorSettings(parameters_file=tmp_path / "absent.yaml").plugin_parameters()
    with pytest.raises(SpecError, match="the actuator's parameters must be a mapping"):
        ActuatorSettings(parameters_file=listed).plugin_parameters()
