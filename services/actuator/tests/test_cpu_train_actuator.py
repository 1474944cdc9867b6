"""The cpu_train actuator: its catalog, what it measures, and the configurations it finds
invalid."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info

from discospace.actuator.cpu_train import CpuTrainActuator, CpuTrainParameters
from discospace.actuator.cpu_train import actuator as cpu_actuator
from discospace.actuator.cpu_train.memory import MIB, estimated_peak_mb
from discospace.actuator.cpu_train.plan import PlanError, train_config
from discospace.actuator.cpu_train.training import TrainResult, train
from discospace.actuator.isolation import ChildProcessRunner
from discospace.actuator.plugin import MeasurementTask
from discospace.actuator.plugins import ActuatorConfigError, load_actuator
from discospace.core import Entity, Experiment, ExperimentCatalog, load_discovery_space
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
TINY = {"model_size": "tiny", "batch_size": 4, "model_max_length": 32, "number_threads": 1}


def _task(actuator=None, parameterization=None, **values) -> MeasurementTask:
    [spec] = (actuator or CpuTrainActuator()).catalog()
    experiment = Experiment.from_spec(spec).parameterize(parameterization or {})
    return MeasurementTask("req-1", Entity.of({**TINY, **values}), experiment)


def _measure(parameterization=None, **values):
    return CpuTrainActuator().measure_blocking(_task(None, parameterization, **values))


def _reason(parameterization=None, **values) -> str:
    outcome = _measure(parameterization, **values)
    assert isinstance(outcome, InvalidMeasurement), outcome
    return outcome.reason


def test_the_catalog_offers_one_train_experiment_with_its_targets_and_options():
    [spec] = CpuTrainActuator().catalog()

    assert (spec.actuator, spec.experiment) == ("cpu_train", "train")
    assert spec.target_properties == (
        "train_tokens_per_second",
        "train_samples_per_second",
        "train_runtime",
        "peak_memory_mb",
        "final_loss",
    )
    assert spec.required_properties == (
        "model_size",
        "batch_size",
        "model_max_length",
        "number_threads",
    )
    assert spec.optional_properties == {
        "dtype": "float32",
        "duration": "20ba",
        "samples_per_epoch": 1024,
        "memory_cap_mb": 0,
        "seed": 0,
    }


def test_the_worker_builds_it_from_its_entry_point_with_parameters_that_set_the_defaults():
    actuator = load_actuator("cpu_train", {"duration": "30sec", "samples_per_epoch": 64})

    assert isinstance(actuator, CpuTrainActuator)
    assert actuator.isolated
    [spec] = actuator.catalog()
    assert spec.optional_properties["duration"] == "30sec"
    assert spec.optional_properties["samples_per_epoch"] == 64


def test_a_measurement_reports_throughput_runtime_memory_and_loss():
    outcome = _measure({"duration": "5ba"})

    assert isinstance(outcome, ValidMeasurement)
    values = outcome.values
    assert set(values) == set(cpu_actuator.TARGETS)
    assert values["train_tokens_per_second"] == pytest.approx(
        values["train_samples_per_second"] * 32, rel=1e-3
    )
    assert values["train_runtime"] == pytest.approx(
        5 * 4 / values["train_samples_per_second"], rel=1e-3
    )
    assert 0 < values["peak_memory_mb"] < 50
    assert 0 < values["final_loss"] < math.log(128) + 0.5


@pytest.mark.parametrize(
    ("duration", "batches", "seconds"),
    [("7ba", 7, None), ("2000tok", 15, None), ("40sp", 10, None), ("1ep", 16, None),
     ("10tok", 1, None), ("2sec", None, 2.0), ("1m30s", None, 90.0)],
)  # fmt: skip
def test_a_duration_in_any_training_unit_becomes_batches_or_seconds(duration, batches, seconds):
    properties = {**TINY, "duration": duration, "samples_per_epoch": 64, "seed": 0}
    properties |= {"dtype": "float32"}

    config = train_config(properties, ("float32",))

    assert (config.max_batches, config.max_seconds) == (batches, seconds)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"model_size": "huge"}, "model_size 'huge' is not a preset: use one of tiny, small"),
        ({"batch_size": 0}, "batch_size must be a whole number of at least 1, not 0"),
        ({"model_max_length": 2.5}, "model_max_length must be a whole number"),
        ({"number_threads": 0}, "number_threads must be a whole number of at least 1"),
        ({"dtype": "float16"}, "dtype must be one of float32, float64, not 'float16'"),
    ],
)
def test_an_unusable_property_makes_the_measurement_invalid_with_the_reason(change, words):
    assert words in _reason(**change)


@pytest.mark.parametrize(
    ("duration", "words"),
    [
        ("3iter", "duration 3iter cannot be trained: give it in ba, ep, sp, tok, sec"),
        ("0.5dur", "duration 0.5dur cannot be trained: give it in ba, ep, sp, tok, sec"),
        ("0ba", "duration must be above zero, not 0ba"),
        ("soon", "duration soon: 'soon' is not a time"),
    ],
)
def test_a_duration_that_cannot_be_counted_in_batches_or_seconds_is_invalid(duration, words):
    assert words in _reason(duration=duration)


def test_a_configuration_estimated_above_the_memory_cap_is_invalid_without_running(monkeypatch):
    monkeypatch.setattr(cpu_actuator, "train", _must_not_run)

    reason = _reason({"memory_cap_mb": 1}, batch_size=64, model_max_length=256)

    assert reason.startswith("out of memory: training would need about")
    assert "above memory_cap_mb 1" in reason


def test_a_run_whose_measured_peak_exceeds_the_cap_is_invalid(monkeypatch):
    monkeypatch.setattr(cpu_actuator, "estimated_peak_mb", lambda *args: 0.0)

    reason = _reason({"memory_cap_mb": 0.5, "duration": "1ba"}, batch_size=16, model_max_length=64)

    assert reason.startswith("out of memory: training used")


def test_a_run_that_numpy_cannot_allocate_is_invalid_out_of_memory(monkeypatch):
    def cannot_allocate(config, **limits):
        raise MemoryError("Unable to allocate 12.0 GiB for an array")

    monkeypatch.setattr(cpu_actuator, "train", cannot_allocate)

    assert _reason().startswith("out of memory: numpy could not allocate (")


def test_a_configuration_estimated_a_little_above_the_cap_is_decided_by_its_measured_peak():
    """Refused on the estimate (74 MiB against a cap of 70), it trains in about 61 MiB."""
    cap = {"memory_cap_mb": 70, "duration": "1ba"}
    outcome = _measure(cap, model_size="tiny", batch_size=2, model_max_length=1024)

    assert isinstance(outcome, ValidMeasurement), outcome
    assert outcome.values["peak_memory_mb"] < 70


def test_a_run_over_the_cap_ends_after_its_warm_up_step():
    """Every later step allocates what the warm-up did: the timed steps would only confirm it."""
    config = train_config(
        {
            "model_size": "tiny",
            "batch_size": 4,
            "model_max_length": 64,
            "duration": "50ba",
            "samples_per_epoch": 64,
            "seed": 0,
            "dtype": "float32",
        },
        ("float32",),
    )
    result = train(config, peak_limit_bytes=1)

    assert (result.steps, len(result.losses)) == (0, 1)


def test_sizes_numpy_cannot_address_are_out_of_memory_not_a_traceback():
    reason = _reason({"duration": "1ba"}, model_size="tiny", batch_size=2**62, model_max_length=8)

    assert reason.startswith("out of memory: numpy cannot make arrays that large")


def test_the_final_loss_leaves_out_the_warm_up_steps_untrained_loss():
    assert _result((9.0, 1.0, 2.0)).final_loss == 1.5
    assert _result((9.0,)).final_loss == 9.0


def test_the_first_run_in_a_process_reports_the_peak_later_runs_do():
    """numpy imports numpy.random at its first use, inside the first run's traced peak, which
    counted its 0.6 MiB of modules (1.69 MiB, then 1.04 for the same entity and seed)."""
    script = (
        "from discospace.actuator.cpu_train.plan import train_config\n"
        "from discospace.actuator.cpu_train.training import train\n"
        "c = train_config({'model_size': 'tiny', 'batch_size': 4, 'model_max_length': 32,"
        " 'duration': '2ba', 'samples_per_epoch': 64, 'seed': 0, 'dtype': 'float32'},"
        " ('float32',))\n"
        "print(train(c).peak_memory_bytes, train(c).peak_memory_bytes)\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    first, second = map(int, ran.stdout.split())

    assert abs(first - second) <= 0.02 * second


def test_a_dtype_in_the_entity_space_wins_over_the_experiments_option():
    cap = {"memory_cap_mb": 6, "duration": "1ba"}  # float32 needs about 5 MiB, float64 about 9

    assert isinstance(_measure(cap, batch_size=8, model_max_length=64), ValidMeasurement)
    assert "out of memory" in _reason(cap, batch_size=8, model_max_length=64, dtype="float64")


def test_blas_runs_with_the_number_of_threads_of_the_entity(monkeypatch):
    seen: list[int] = []

    def record_threads(config, **limits):
        seen.append(max(pool["num_threads"] for pool in threadpool_info()))
        return _result(losses=(4.0, 3.0))

    monkeypatch.setattr(cpu_actuator, "train", record_threads)
    before = max(pool["num_threads"] for pool in threadpool_info())

    _measure(number_threads=1)
    _measure(number_threads=3)

    assert seen == [1, 3]
    assert max(pool["num_threads"] for pool in threadpool_info()) == before


def test_a_run_whose_loss_diverges_is_invalid(monkeypatch):
    monkeypatch.setattr(cpu_actuator, "train", lambda config, **limits: _result((4.0, math.nan)))

    assert _reason() == "diverged: the training loss is not a finite number"


async def test_the_in_process_fallback_measures_in_a_thread():
    actuator = CpuTrainActuator(CpuTrainParameters(duration="2ba"))

    outcome = await actuator.measure(_task(actuator))

    assert isinstance(outcome, ValidMeasurement)


async def test_a_measurement_runs_in_a_child_process_of_the_worker():
    actuator = CpuTrainActuator(CpuTrainParameters(duration="3ba"))

    outcome = await ChildProcessRunner(actuator)(_task(actuator, number_threads=2))

    assert isinstance(outcome, ValidMeasurement)
    assert outcome.values["train_tokens_per_second"] > 0


def test_plan_errors_are_one_sentence():
    with pytest.raises(PlanError, match=r"^batch_size is missing: the experiment requires it$"):
        train_config({"model_size": "tiny"}, ("float32",))


def _must_not_run(config, **limits):
    raise AssertionError("training ran although the estimate was above the cap")


def _result(losses, peak_bytes: int = 1) -> TrainResult:
    return TrainResult(
        steps=1,
        runtime_s=1.0,
        peak_memory_bytes=peak_bytes,
        losses=losses,
        tokens_per_batch=1,
        batch_size=1,
    )


def _as_estimated(config, **limits) -> TrainResult:
    """A run (not run) whose peak is the configuration's estimate."""
    estimate = estimated_peak_mb(config.preset, config.batch_size, config.max_length, config.dtype)
    return _result((2.0, 1.0), peak_bytes=int(estimate * MIB))


def test_the_example_space_fits_the_catalog_and_three_of_its_entities_exceed_its_cap(
    monkeypatch,
):
    space = load_discovery_space(EXAMPLES / "cpu-train-space.yaml")
    actuator = CpuTrainActuator()
    [ref] = space.experiments
    experiment = Experiment.from_spec(actuator.catalog()[0]).parameterize(ref.parameterization)
    monkeypatch.setattr(cpu_actuator, "train", _as_estimated)  # no run

    outcomes = {
        entity: actuator.measure_blocking(MeasurementTask("req", entity, experiment))
        for entity in space.entity_space
    }
    invalid = [e.as_dict() for e, o in outcomes.items() if isinstance(o, InvalidMeasurement)]

    assert space.problems(ExperimentCatalog(actuator.catalog())) == []
    assert space.entity_space.size == 24
    assert sorted((e["model_size"], e["batch_size"], e["model_max_length"]) for e in invalid) == [
        ("medium", 64, 64),
        ("medium", 64, 128),
        ("small", 64, 128),
    ]


@pytest.mark.parametrize("actuator", ["cpu_train", "gpu_train"])
@pytest.mark.parametrize(
    ("duration", "sentence"),
    [
        *[(d, f"duration must be above zero, not {d}") for d in ("0ba", "-3ba", "0sec")],
        *[
            (d, f"duration {d} cannot be trained: give it in ba, ep, sp, tok, sec")
            for d in ("0.5dur", "5iter")
        ],
    ],
)
def test_a_default_duration_every_measurement_would_refuse_is_refused_at_start(
    actuator, duration, sentence
):
    """It was accepted, and each entity then got an invalid result for the operator's mistake
    (a single run has no maximum for a dur to be a share of)."""
    with pytest.raises(ActuatorConfigError) as refused:
        load_actuator(actuator, {"duration": duration})
    assert str(refused.value) == f"Parameters of actuator '{actuator}': duration: {sentence}."
