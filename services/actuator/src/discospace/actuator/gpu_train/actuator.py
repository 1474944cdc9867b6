"""The `gpu_train` actuator: the `cpu_train` workload in torch on a CUDA GPU, with the GPU's
utilization, memory, power and energy from NVML.

Experiment `train`. Required (constitutive) properties: `model_size`, `batch_size`,
`model_max_length`, `number_gpus`. Optional: `dtype` (bfloat16, float16, float32; mixed
precision for the first two), `duration` (`50ba`, `2000tok`, `1ep`, `30sec`),
`samples_per_epoch` and `seed`. A property the entity space holds wins over the option.

Outcomes: a run that ran out of GPU memory is invalid ("out of memory: ..."), and so is a
diverged loss or an unusable property; `number_gpus` above 1 is invalid too, as this actuator
trains on one GPU (no data parallelism). A worker without torch, CUDA or NVML cannot measure at
all: that is a transient failure ("no CUDA GPU: ..."), so that a worker of a GPU pool retries it.
The worker runs the plugin in a child process (`isolated`); torch is imported only there.
"""

from __future__ import annotations

import asyncio
import math
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from discospace.actuator.cpu_train.plan import (
    PlanError,
    TrainConfig,
    run_length,
    train_config,
    whole_number,
)
from discospace.actuator.cpu_train.training import FINAL_LOSS_WINDOW
from discospace.actuator.gpu_train.backend import (
    NO_CUDA,
    Backend,
    TorchRun,
    first_line,
    is_out_of_memory,
    load_backend,
)
from discospace.actuator.gpu_train.nvml import (
    GpuCounters,
    GpuMonitor,
    GpuUsage,
    NvmlUnavailableError,
    open_counters,
)
from discospace.actuator.plugin import MeasurementTask, Outcome, TransientFailure
from discospace.core import ExperimentSpec, Time
from discospace.core.canonical import Value
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

ACTUATOR_NAME = "gpu_train"
EXPERIMENT = "train"
DTYPES = ("bfloat16", "float16", "float32")
TARGETS = (
    "train_tokens_per_second",
    "train_tokens_per_gpu_per_second",
    "gpu_memory_utilization_peak",
    "gpu_compute_utilization_avg",
    "train_runtime",
    "energy_joules",
    "gpu_power_watts_avg",
    "final_loss",
)
REQUIRED = ("model_size", "batch_size", "model_max_length", "number_gpus")
SUPPORTED_GPUS = 1


class GpuTrainParameters(BaseModel):
    """What `DISCOSPACE_ACTUATOR_PARAMETERS` may set for a GPU worker."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    duration: Time = Field(
        default=Time(50, "ba"), description="How long a run trains unless the space says."
    )
    samples_per_epoch: int = Field(
        default=1024, ge=1, description="Samples in one epoch of the synthetic stream (for ep)."
    )
    sample_interval_s: float = Field(
        default=0.1, gt=0, le=10, description="How often NVML is read during a run."
    )

    @field_validator("duration")
    @classmethod
    def _trainable(cls, duration: Time) -> Time:
        """A default every measurement would fail on is refused at start (as cpu_train's)."""
        return run_length(duration)


class GpuTrainActuator:
    """Measures training throughput and energy of the torch transformer on one CUDA GPU."""

    name = ACTUATOR_NAME
    Parameters = GpuTrainParameters
    isolated: ClassVar[bool] = True
    one_at_a_time: ClassVar[bool] = True
    """Its measurements take the GPU whole: two at once would share cuda:0, each measuring the
    other's load, and an out-of-memory a sibling caused would be recorded as this entity's."""

    def __init__(self, parameters: GpuTrainParameters | None = None) -> None:
        self.parameters = parameters or GpuTrainParameters()

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        options: dict[str, Value] = {
            "dtype": "bfloat16",
            "duration": str(self.parameters.duration),
            "samples_per_epoch": self.parameters.samples_per_epoch,
            "seed": 0,
        }
        return (
            ExperimentSpec(
                actuator=ACTUATOR_NAME,
                experiment=EXPERIMENT,
                description="Train a small transformer language model on one CUDA GPU for a "
                "duration; throughput, GPU utilization and memory (percent), energy (NVML).",
                target_properties=TARGETS,
                required_properties=REQUIRED,
                optional_properties=options,
            ),
        )

    def measure_blocking(self, task: MeasurementTask) -> Outcome:
        """Runs the training on this process's GPU (in the worker's child process)."""
        properties = {**task.options, **task.entity.as_dict()}
        try:
            config = train_config(properties, DTYPES)
            gpus = whole_number(properties, "number_gpus")
        except PlanError as error:
            return InvalidMeasurement(reason=str(error))
        if gpus > SUPPORTED_GPUS:
            return InvalidMeasurement(
                reason=f"number_gpus {gpus} is not supported: gpu_train trains on one GPU "
                "(no data parallelism)"
            )
        return measure_on_gpu(config, gpus, self.parameters.sample_interval_s)

    async def measure(self, task: MeasurementTask) -> Outcome:
        """In-process fallback: `measure_blocking` in a thread."""
        return await asyncio.to_thread(self.measure_blocking, task)


def measure_on_gpu(
    config: TrainConfig,
    gpus: int,
    interval_s: float,
    backend: Backend | None = None,
    counters: GpuCounters | None = None,
) -> Outcome:
    """Train on GPU 0 while NVML is sampled; `backend` and `counters` default to the real ones."""
    backend = backend or load_backend()
    if backend is None or backend.cuda_devices() < gpus:
        return TransientFailure(NO_CUDA)
    if counters is None:
        try:
            counters = open_counters(backend.device_uuid(0))
        except ImportError:
            return TransientFailure("no NVML: gpu_train needs nvidia-ml-py (the gpu extra)")
        except NvmlUnavailableError as error:  # another worker's machine may have it
            return TransientFailure(str(error))
    monitor = GpuMonitor(counters, interval_s)
    try:
        run = backend.train_on_device(config, lambda: monitor)
    except Exception as error:
        if is_out_of_memory(error):
            return InvalidMeasurement(reason=f"out of memory: {first_line(error)}")
        raise
    if monitor.failure is not None:
        return TransientFailure(
            f"NVML stopped answering during the run ({first_line(monitor.failure)}): its "
            "readings cover part of it only"
        )
    return outcome_of(config, gpus, run, monitor.usage(_reserved_fraction(run)))


def outcome_of(config: TrainConfig, gpus: int, run: TorchRun, usage: GpuUsage) -> Outcome:
    """The experiment's values from a run and what NVML saw during it."""
    if not all(math.isfinite(loss) for loss in run.losses):
        return InvalidMeasurement(reason="diverged: the training loss is not a finite number")
    timed = run.losses[1:] or run.losses  # losses[0]: the warm-up, an untrained model's
    last = timed[-FINAL_LOSS_WINDOW:]
    tokens_per_second = run.steps * config.tokens_per_batch / run.runtime_s
    return ValidMeasurement(
        values={
            "train_tokens_per_second": round(tokens_per_second, 3),
            "train_tokens_per_gpu_per_second": round(tokens_per_second / gpus, 3),
            "gpu_memory_utilization_peak": round(usage.memory_utilization_peak, 3),
            "gpu_compute_utilization_avg": round(usage.compute_utilization_avg, 3),
            "train_runtime": round(run.runtime_s, 6),
            "energy_joules": round(usage.energy_joules, 3),
            "gpu_power_watts_avg": round(usage.power_watts_avg, 3),
            "final_loss": round(sum(last) / len(last), 6),
        }
    )


def _reserved_fraction(run: TorchRun) -> float:
    """torch's peak reservation as a share of the device (NVML samples may miss a spike)."""
    if run.device_memory_bytes <= 0:
        return 0.0
    return run.max_memory_reserved_bytes / run.device_memory_bytes
