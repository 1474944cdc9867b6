"""An actuator worker's settings, from the environment and a parameters file."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from discospace.actuator.settings import MAX_CONCURRENCY, ActuatorSettings
from discospace.core import Time
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

    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe")

    with pytest.raises(SpecError, match=r"absent\.yaml: no such file"):
        ActuatorSettings(parameters_file=tmp_path / "absent.yaml").plugin_parameters()
    with pytest.raises(SpecError, match=r"binary\.yaml: cannot be read \('utf-8' codec"):
        ActuatorSettings(parameters_file=binary).plugin_parameters()
    with pytest.raises(SpecError, match="the actuator's parameters must be a mapping"):
        ActuatorSettings(parameters_file=listed).plugin_parameters()


def test_a_blank_parameters_file_is_no_file(monkeypatch):
    monkeypatch.setenv("DISCOSPACE_ACTUATOR_PARAMETERS_FILE", " ")

    settings = ActuatorSettings()

    assert settings.parameters_file is None
    assert settings.plugin_parameters() == {}


@pytest.mark.parametrize("blank", ["", " "])
def test_a_blank_gpu_model_is_no_model(monkeypatch, blank: str):
    """`GPU_MODEL: ${GPU_MODEL:-}` announced the model '': the pool then served no entity with
    a `gpu_model` property, and the refusals never named the empty model."""
    monkeypatch.setenv("DISCOSPACE_ACTUATOR_GPU_MODEL", blank)

    assert ActuatorSettings().gpu_model is None


@pytest.mark.parametrize(
    ("written", "seconds"),
    [("30sec", 30), ("10min", 600), ("10m", 600), ("1h20m40s", 4840), ("45S", 45)],
)
def test_the_measurement_timeout_is_a_time_in_seconds(monkeypatch, written, seconds):
    monkeypatch.setenv("DISCOSPACE_ACTUATOR_TIMEOUT", written)

    settings = ActuatorSettings()

    assert settings.timeout == Time(seconds, "sec")
    assert settings.max_poll_interval_ms == (seconds + 120) * 1000


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        ("3ep", "a measurement timeout is a duration like 30sec or 10min, not '3ep'"),
        ("soon", "a measurement timeout is a duration like 30sec or 10min, not 'soon'"),
        ("0sec", "a measurement timeout must be above zero, not 0sec"),
    ],
)
def test_a_timeout_that_is_not_a_duration_in_seconds_is_refused_in_a_sentence(written, problem):
    with pytest.raises(ValidationError) as caught:
        ActuatorSettings(timeout=written)

    assert caught.value.errors()[0]["msg"] == f"Value error, {problem}"


def test_a_worker_has_an_hour_per_measurement_and_no_memory_limit_unless_told(monkeypatch):
    for name in ("TIMEOUT", "MEMORY_LIMIT_MB"):
        monkeypatch.delenv(f"DISCOSPACE_ACTUATOR_{name}", raising=False)
    limited = ActuatorSettings(memory_limit_mb=2048)

    assert (ActuatorSettings().timeout, ActuatorSettings().memory_limit_mb) == (
        Time(3600, "sec"),
        None,
    )
    assert limited.memory_limit_mb == 2048
    with pytest.raises(ValidationError):
        ActuatorSettings(memory_limit_mb=0)


@pytest.mark.parametrize("concurrency", [0, MAX_CONCURRENCY + 1, 100_000])
def test_a_concurrency_out_of_bounds_is_refused(concurrency):
    """Each unit is a consumer (a connection, a group member): 10^5 were accepted."""
    assert ActuatorSettings(concurrency=MAX_CONCURRENCY).concurrency == MAX_CONCURRENCY
    with pytest.raises(ValidationError, match="concurrency"):
        ActuatorSettings(concurrency=concurrency)


def test_a_blank_worker_id_and_a_memory_limit_beyond_rlimit_are_refused_at_start():
    """A blank id failed every MeasurementStarted; 2^43 MiB overflowed RLIMIT_AS in each child."""
    from discospace.actuator.settings import MAX_MEMORY_LIMIT_MB

    with pytest.raises(ValidationError, match="worker_id"):
        ActuatorSettings(worker_id="")
    assert ActuatorSettings(memory_limit_mb=MAX_MEMORY_LIMIT_MB).memory_limit_mb == 2**43 - 1
    with pytest.raises(ValidationError, match="memory_limit_mb"):
        ActuatorSettings(memory_limit_mb=MAX_MEMORY_LIMIT_MB + 1)
