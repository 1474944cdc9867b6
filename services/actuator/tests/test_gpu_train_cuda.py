"""gpu_train on a real CUDA GPU: every target measured, the loss falls, out of memory is invalid.

These run only where torch sees a CUDA device (a GPU worker, or a lent GPU machine)."""

from __future__ import annotations

import math

import pytest

from discospace.actuator.cpu_train.data import MarkovStream
from discospace.actuator.cpu_train.plan import TrainConfig
from discospace.actuator.cpu_train.presets import PRESETS
from discospace.actuator.gpu_train import GpuTrainActuator, GpuTrainParameters
from discospace.actuator.gpu_train.actuator import TARGETS
from discospace.actuator.gpu_train.backend import NO_CUDA, load_backend
from discospace.actuator.plugin import MeasurementTask
from discospace.core import Entity, Experiment
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

BACKEND = load_backend()
needs_torch = pytest.mark.skipif(
    BACKEND is None, reason="torch is not installed: the torch model runs where it is"
)
needs_cuda = pytest.mark.skipif(BACKEND is None or BACKEND.cuda_devices() == 0, reason=NO_CUDA)


def _measure(duration: str, dtype: str = "bfloat16", **values) -> object:
    actuator = GpuTrainActuator(GpuTrainParameters(duration=duration, sample_interval_s=0.05))
    [spec] = actuator.catalog()
    experiment = Experiment.from_spec(spec).parameterize({"dtype": dtype})
    entity = Entity.of(
        {"model_size": "small", "batch_size": 8, "model_max_length": 128, "number_gpus": 1} | values
    )
    return actuator.measure_blocking(MeasurementTask("req-1", entity, experiment))


def _loss_falls(device: str) -> None:
    preset = PRESETS["tiny"]
    config = TrainConfig(preset, batch_size=8, max_length=64, dtype="float32", max_batches=200)
    run = BACKEND.train_on_device(config, device=device)  # type: ignore[union-attr,call-arg]

    assert run.steps == 200
    assert run.losses[0] == pytest.approx(math.log(preset.vocab_size), abs=0.3)
    unigram = MarkovStream.create(preset.vocab_size, seed=0).unigram_entropy()
    assert sum(run.losses[-10:]) / 10 < unigram - 2.0


@needs_torch
def test_the_torch_model_learns_the_stream_on_the_cpu():
    _loss_falls("cpu")


@needs_cuda
def test_the_loss_falls_on_the_gpu_as_on_the_cpu():
    _loss_falls("cuda")


@needs_cuda
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_a_measurement_on_the_gpu_reports_every_target(dtype):
    outcome = _measure("3sec", dtype)

    assert isinstance(outcome, ValidMeasurement), outcome
    values = outcome.values
    assert set(values) == set(TARGETS)
    assert values["train_tokens_per_second"] > 0
    assert values["train_runtime"] >= 3
    assert 0 < values["gpu_memory_utilization_peak"] <= 100
    assert 0 <= values["gpu_compute_utilization_avg"] <= 100
    assert values["energy_joules"] > 0
    assert values["gpu_power_watts_avg"] > 0
    assert values["final_loss"] < math.log(256)


@needs_cuda
def test_a_batch_too_large_for_the_gpu_is_invalid_out_of_memory():
    outcome = _measure("1ba", model_size="large", batch_size=512, model_max_length=8192)

    assert isinstance(outcome, InvalidMeasurement), outcome
    assert outcome.reason.startswith("out of memory:")
