"""The `cpu_train` actuator: trains the numpy language model on this machine's CPU and reports
its throughput, memory and final loss.

Experiment `train`. Required (constitutive) properties: `model_size` (a preset: tiny, small,
medium, large), `batch_size`, `model_max_length` (tokens per sample) and `number_threads` (BLAS
threads). Optional: `dtype` (float32 or float64), `duration` (a time: `50ba`, `2000tok`, `1ep`,
`30sec`), `samples_per_epoch` (what `1ep` means), `memory_cap_mb` (0: no cap) and `seed`.
A property the entity space holds wins over the experiment's optional value, so a space may
explore `dtype` or `duration` too.

A configuration is invalid (a finding, never retried) when a property is unusable, when the
estimated or measured peak memory exceeds `memory_cap_mb`, when numpy runs out of memory, or
when the loss diverges. The plugin runs in a child process of the worker (`isolated`), which
calls `measure_blocking`; `measure` is the in-process fallback.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from threadpoolctl import threadpool_limits

from discospace.actuator.cpu_train.memory import (
    MIB,
    beyond_numpy,
    beyond_numpy_reason,
    estimated_peak_mb,
)
from discospace.actuator.cpu_train.plan import (
    PlanError,
    TrainConfig,
    run_length,
    train_config,
    whole_number,
)
from discospace.actuator.cpu_train.training import TrainResult, train
from discospace.actuator.plugin import MeasurementTask, Outcome
from discospace.core import ExperimentSpec, Time
from discospace.core.canonical import Value
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

ACTUATOR_NAME = "cpu_train"
EXPERIMENT = "train"
DTYPES = ("float32", "float64")
TARGETS = (
    "train_tokens_per_second",
    "train_samples_per_second",
    "train_runtime",
    "peak_memory_mb",
    "final_loss",
)
REQUIRED = ("model_size", "batch_size", "model_max_length", "number_threads")

_in_process = threading.Lock()
"""Thread limits and tracemalloc are process-wide: in-process runs go one at a time."""


class CpuTrainParameters(BaseModel):
    """What `DISCOSPACE_ACTUATOR_PARAMETERS` may set: the defaults of the catalog's options."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    duration: Time = Field(
        default=Time(20, "ba"), description="How long a run trains unless the space says."
    )
    samples_per_epoch: int = Field(
        default=1024, ge=1, description="Samples in one epoch of the synthetic stream (for ep)."
    )

    @field_validator("duration")
    @classmethod
    def _trainable(cls, duration: Time) -> Time:
        """A default every measurement would fail on is refused at start, not recorded as an
        invalid result of each entity."""
        return run_length(duration)


class CpuTrainActuator:
    """Measures training throughput of the numpy transformer on this machine's CPU."""

    name = ACTUATOR_NAME
    Parameters = CpuTrainParameters
    isolated: ClassVar[bool] = True

    def __init__(self, parameters: CpuTrainParameters | None = None) -> None:
        self.parameters = parameters or CpuTrainParameters()

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        options: dict[str, Value] = {
            "dtype": "float32",
            "duration": str(self.parameters.duration),
            "samples_per_epoch": self.parameters.samples_per_epoch,
            "memory_cap_mb": 0,
            "seed": 0,
        }
        return (
            ExperimentSpec(
                actuator=ACTUATOR_NAME,
                experiment=EXPERIMENT,
                description="Train a small numpy transformer language model on the CPU for a "
                "duration; throughput, peak memory the training allocates (MiB, traced) and "
                "final loss (nats, mean of the last 10 steps).",
                target_properties=TARGETS,
                required_properties=REQUIRED,
                optional_properties=options,
            ),
        )

    def measure_blocking(self, task: MeasurementTask) -> Outcome:
        """Runs the training in this process and thread (the worker's child process)."""
        properties = {**task.options, **task.entity.as_dict()}
        try:
            config = train_config(properties, DTYPES)
            threads = whole_number(properties, "number_threads")
            cap_mb = _memory_cap_mb(properties)
        except PlanError as error:
            return InvalidMeasurement(reason=str(error))
        return _measure(config, threads, cap_mb)

    async def measure(self, task: MeasurementTask) -> Outcome:
        """In-process fallback: `measure_blocking` in a thread, one run at a time."""
        return await asyncio.to_thread(_one_at_a_time, self.measure_blocking, task)


def _one_at_a_time(measure: Callable[[MeasurementTask], Outcome], task: MeasurementTask) -> Outcome:
    with _in_process:
        return measure(task)


def _memory_cap_mb(properties: dict[str, Value]) -> float | None:
    cap = properties.get("memory_cap_mb", 0)
    if isinstance(cap, bool) or not isinstance(cap, int | float) or cap < 0:
        raise PlanError(f"memory_cap_mb must be a number of at least 0 (0: no cap), not {cap!r}")
    return float(cap) or None


ESTIMATE_MARGIN = 1.5
"""How far the memory estimate may be from the measured peak (`memory.py`): a configuration is
refused on its estimate alone only beyond the cap times this; under it, the warm-up step's
measured peak decides, before any timed step (refused on the estimate, 2 x 1024 tokens of the
tiny model, estimated 74 MiB, was invalid under a cap of 70 MiB though it trains in 61 MiB)."""


def _measure(config: TrainConfig, threads: int, cap_mb: float | None) -> Outcome:
    estimate = estimated_peak_mb(config.preset, config.batch_size, config.max_length, config.dtype)
    if cap_mb is not None and estimate > ESTIMATE_MARGIN * cap_mb:
        return _over_cap("would need about", estimate, cap_mb)
    try:
        with threadpool_limits(limits=threads):
            result = train(config, peak_limit_bytes=None if cap_mb is None else int(cap_mb * MIB))
    except MemoryError:
        return InvalidMeasurement(
            reason=f"out of memory: numpy could not allocate ({estimate:.0f} MiB estimated)"
        )
    except ValueError as error:  # beyond what numpy can address at all
        if not beyond_numpy(error):
            raise
        return InvalidMeasurement(reason=beyond_numpy_reason(estimate))
    peak_mb = result.peak_memory_bytes / MIB
    if cap_mb is not None and peak_mb > cap_mb:
        return _over_cap("used", peak_mb, cap_mb)
    if result.diverged:
        return InvalidMeasurement(reason="diverged: the training loss is not a finite number")
    return ValidMeasurement(values=values_of(result))


def _over_cap(verb: str, mb: float, cap_mb: float) -> InvalidMeasurement:
    return InvalidMeasurement(
        reason=f"out of memory: training {verb} {mb:.1f} MiB, above memory_cap_mb {cap_mb:g}"
    )


def values_of(result: TrainResult) -> dict[str, Value]:
    """The experiment's target values from a run."""
    return {
        "train_tokens_per_second": round(result.tokens_per_second, 3),
        "train_samples_per_second": round(result.samples_per_second, 4),
        "train_runtime": round(result.runtime_s, 6),
        "peak_memory_mb": round(result.peak_memory_bytes / MIB, 3),
        "final_loss": round(result.final_loss, 6),
    }
