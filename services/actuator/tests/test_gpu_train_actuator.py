"""The gpu_train actuator without a GPU: its catalog, its invalid configurations, and a
measurement through a fake torch backend and fake NVML counters."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from contextlib import AbstractContextManager

import pytest

from discospace.actuator.cpu_train.plan import TrainConfig
from discospace.actuator.cpu_train.presets import PRESETS
from discospace.actuator.gpu_train import GpuTrainActuator, GpuTrainParameters
from discospace.actuator.gpu_train import actuator as gpu_actuator
from discospace.actuator.gpu_train.actuator import TARGETS, measure_on_gpu
from discospace.actuator.gpu_train.backend import NO_CUDA, TorchRun, is_out_of_memory, load_backend
from discospace.actuator.plugin import MeasurementTask, TransientFailure
from discospace.actuator.plugins import load_actuator
from discospace.core import Entity, Experiment
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

SMALL = {"model_size": "small", "batch_size": 8, "model_max_length": 128, "number_gpus": 1}
CONFIG = TrainConfig(PRESETS["small"], batch_size=8, max_length=128, max_batches=10)
GIB = 2**30
BACKEND = load_backend()


class FakeCounters:
    """A GPU at 80 % utilization, a third of its memory used, drawing about 250 W."""

    def __init__(self) -> None:
        self.energy = 5000.0

    def utilization_percent(self) -> float:
        return 80.0

    def memory_used_fraction(self) -> float:
        return 1 / 3

    def power_watts(self) -> float:
        return 250.0

    def energy_joules(self) -> float:
        self.energy += 25.0  # 25 J between the start and the end of the run
        return self.energy


class FakeBackend:
    """Trains nothing: enters the monitor around 'timed steps' and returns a fixed run."""

    def __init__(self, devices: int = 1, error: Exception | None = None, losses=None) -> None:
        self.devices = devices
        self.error = error
        self.losses = losses or (5.5, 4.0, 3.0, 2.0)
        self.trained: list[TrainConfig] = []

    def cuda_devices(self) -> int:
        return self.devices

    def device_uuid(self, index: int = 0) -> str | None:
        return "fake"

    def train_on_device(self, config, around_timed_steps) -> TorchRun:
        self.trained.append(config)
        if self.error is not None:
            raise self.error
        monitor: AbstractContextManager[object] = around_timed_steps()
        with monitor:
            time.sleep(0.05)
        return TorchRun(
            steps=10,
            runtime_s=0.5,
            losses=self.losses,
            max_memory_reserved_bytes=40 * GIB,
            device_memory_bytes=80 * GIB,
        )


def _task(parameterization=None, **values) -> MeasurementTask:
    [spec] = GpuTrainActuator().catalog()
    experiment = Experiment.from_spec(spec).parameterize(parameterization or {})
    return MeasurementTask("req-1", Entity.of({**SMALL, **values}), experiment)


def _reason(**values) -> str:
    outcome = GpuTrainActuator().measure_blocking(_task(**values))
    assert isinstance(outcome, InvalidMeasurement), outcome
    return outcome.reason


def test_the_catalog_offers_train_with_gpu_targets_and_energy():
    [spec] = GpuTrainActuator().catalog()

    assert (spec.actuator, spec.experiment) == ("gpu_train", "train")
    assert spec.target_properties == TARGETS
    assert {"train_tokens_per_gpu_per_second", "energy_joules", "gpu_power_watts_avg"} <= set(
        spec.target_properties
    )
    assert spec.required_properties == (
        "model_size",
        "batch_size",
        "model_max_length",
        "number_gpus",
    )
    assert spec.optional_properties == {
        "dtype": "bfloat16",
        "duration": "50ba",
        "samples_per_epoch": 1024,
        "seed": 0,
    }


def test_the_worker_builds_it_from_its_entry_point_without_torch():
    actuator = load_actuator("gpu_train", {"duration": "2m", "sample_interval_s": 0.5})

    assert isinstance(actuator, GpuTrainActuator)
    assert actuator.isolated
    assert actuator.catalog()[0].optional_properties["duration"] == "120sec"


def test_importing_the_actuator_does_not_import_torch():
    code = (
        "import sys, discospace.actuator.gpu_train; "
        "assert 'torch' not in sys.modules and 'pynvml' not in sys.modules"
    )

    subprocess.run([sys.executable, "-c", code], check=True)


def test_more_than_one_gpu_is_invalid_with_the_reason():
    assert _reason(number_gpus=2) == (
        "number_gpus 2 is not supported: gpu_train trains on one GPU (no data parallelism)"
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"dtype": "float64"}, "dtype must be one of bfloat16, float16, float32, not 'float64'"),
        ({"model_size": "xl"}, "model_size 'xl' is not a preset"),
        ({"number_gpus": 0}, "number_gpus must be a whole number of at least 1, not 0"),
        ({"duration": "3iter"}, "duration 3iter cannot be trained: give it in ba, ep, sp"),
    ],
)
def test_an_unusable_property_is_invalid_before_any_gpu_is_touched(change, words):
    assert words in _reason(**change)


def test_a_measurement_reports_throughput_memory_utilization_and_energy():
    backend = FakeBackend()

    outcome = measure_on_gpu(CONFIG, 1, 60.0, backend=backend, counters=FakeCounters())

    assert isinstance(outcome, ValidMeasurement)
    values = outcome.values
    assert set(values) == set(TARGETS)
    assert values["train_tokens_per_second"] == pytest.approx(10 * 8 * 128 / 0.5)
    assert values["train_tokens_per_gpu_per_second"] == values["train_tokens_per_second"]
    assert values["train_runtime"] == 0.5
    assert values["gpu_compute_utilization_avg"] == pytest.approx(80.0)
    assert values["gpu_memory_utilization_peak"] == pytest.approx(50.0)  # torch reserved 40/80
    assert values["energy_joules"] == pytest.approx(25.0)
    assert 25.0 / 0.5 < values["gpu_power_watts_avg"] <= 25.0 / 0.05  # over the monitored time
    assert values["final_loss"] == pytest.approx((4.0 + 3.0 + 2.0) / 3)  # not the warm-up's
    assert backend.trained == [CONFIG]


def test_a_gpu_out_of_memory_is_an_invalid_result_with_the_first_line_of_the_error():
    class OutOfMemoryError(RuntimeError):  # torch.cuda.OutOfMemoryError, by name
        pass

    error = OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 20.00 GiB.\nGPU 0 has a total capacity of 79 GiB"
    )

    outcome = measure_on_gpu(CONFIG, 1, 60.0, FakeBackend(error=error), FakeCounters())

    assert outcome == InvalidMeasurement(
        reason="out of memory: CUDA out of memory. Tried to allocate 20.00 GiB"
    )


@pytest.mark.parametrize(
    ("error", "out_of_memory"),
    [
        (RuntimeError("CUDA error: out of memory"), True),
        (RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"), True),
        (RuntimeError("CUDA error: device-side assert triggered"), False),
        (ValueError("out of memory"), False),
        (MemoryError(), False),
    ],
)
def test_only_errors_of_a_failed_device_allocation_count_as_out_of_memory(error, out_of_memory):
    assert is_out_of_memory(error) is out_of_memory


def test_another_error_of_the_backend_is_raised_for_the_worker_to_report():
    error = RuntimeError("CUDA error: device-side assert triggered")

    with pytest.raises(RuntimeError, match="device-side assert"):
        measure_on_gpu(CONFIG, 1, 60.0, FakeBackend(error=error), FakeCounters())


def test_a_diverged_loss_is_invalid():
    backend = FakeBackend(losses=(5.0, math.inf, math.nan))

    outcome = measure_on_gpu(CONFIG, 1, 60.0, backend=backend, counters=FakeCounters())

    assert outcome == InvalidMeasurement(
        reason="diverged: the training loss is not a finite number"
    )


def test_a_worker_without_a_gpu_fails_transiently_so_the_explorer_retries_it():
    backend = FakeBackend(devices=0)

    outcome = measure_on_gpu(CONFIG, 1, 60.0, backend=backend, counters=FakeCounters())

    assert outcome == TransientFailure(NO_CUDA)
    assert backend.trained == []


def test_a_worker_whose_nvml_cannot_start_fails_transiently(monkeypatch):
    """The README promises a retry: another worker's machine may read its GPU."""
    from discospace.actuator.gpu_train.nvml import NvmlUnavailableError

    def unavailable(uuid):
        raise NvmlUnavailableError("NVML cannot read the GPU (NVML Shared Library Not Found)")

    monkeypatch.setattr(gpu_actuator, "open_counters", unavailable)
    backend = FakeBackend(devices=1)

    outcome = measure_on_gpu(CONFIG, 1, 60.0, backend=backend)

    assert outcome == TransientFailure("NVML cannot read the GPU (NVML Shared Library Not Found)")
    assert backend.trained == []


def test_nvml_failing_during_the_run_fails_it_transiently_not_a_partial_reading():
    """The sampling thread died with the error (printed only) and the run was stored as valid,
    its utilization and power averaged over the samples before the error."""

    class Failing(FakeCounters):
        reads = 0

        def utilization_percent(self) -> float:
            self.reads += 1
            if self.reads > 1:  # the first reading, at the start; the thread's fail
                raise RuntimeError("Unknown Error\nmore")
            return 80.0

    outcome = measure_on_gpu(CONFIG, 1, 0.01, backend=FakeBackend(), counters=Failing())

    assert outcome == TransientFailure(
        "NVML stopped answering during the run (Unknown Error): its readings cover part of it only"
    )


def test_without_torch_a_measurement_fails_transiently_naming_what_is_missing(monkeypatch):
    monkeypatch.setattr(gpu_actuator, "load_backend", lambda: None)
    actuator = GpuTrainActuator(GpuTrainParameters(duration="2ba"))

    assert actuator.measure_blocking(_task()) == TransientFailure(
        "no CUDA GPU: gpu_train needs torch with CUDA"
    )


@pytest.mark.skipif(
    BACKEND is not None and BACKEND.cuda_devices() > 0,
    reason="this machine has a CUDA GPU: test_gpu_train_cuda.py measures on it",
)
def test_a_worker_with_torch_or_without_it_but_no_gpu_fails_transiently():
    actuator = GpuTrainActuator(GpuTrainParameters(duration="2ba"))

    assert actuator.measure_blocking(_task()) == TransientFailure(NO_CUDA)
