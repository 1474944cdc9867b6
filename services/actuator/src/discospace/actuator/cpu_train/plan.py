"""From an entity's properties to the run that measures it, or the sentence saying why none can.

`cpu_train` and `gpu_train` read the same properties: `model_size` (a preset), `batch_size`,
`model_max_length`, `duration` (a time: `50ba`, `2000tok`, `1ep`, `30sec`), `samples_per_epoch`
(the size of an epoch, for `ep`), `seed` and `dtype`. A problem is a `PlanError` whose message is
one sentence; the actuators turn it into an invalid measurement, since the configuration, not
the machine, is at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from discospace.actuator.cpu_train.presets import ModelPreset, preset_named
from discospace.core import Time, TimeUnit
from discospace.core.canonical import Value
from discospace.core.errors import TimeError


class PlanError(ValueError):
    """The properties describe no run that can be measured; the message is one sentence."""


@dataclass(frozen=True)
class TrainConfig:
    """What one run trains: the model, the batches, and until when."""

    preset: ModelPreset
    batch_size: int
    max_length: int
    dtype: str = "float32"
    seed: int = 0
    max_batches: int | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        if (self.max_batches is None) == (self.max_seconds is None):
            raise ValueError("a run stops after max_batches or after max_seconds, exactly one")
        if min(self.batch_size, self.max_length, self.max_batches or 1) < 1:
            raise ValueError("batch_size, max_length and max_batches are at least 1")

    @property
    def tokens_per_batch(self) -> int:
        return self.batch_size * self.max_length

    def finished(self, steps: int, elapsed_s: float) -> bool:
        """Whether a run that took `steps` timed steps in `elapsed_s` seconds is done."""
        if self.max_seconds is not None:
            return elapsed_s >= self.max_seconds
        return steps >= (self.max_batches or 1)


def whole_number(properties: Mapping[str, Value], name: str, minimum: int = 1) -> int:
    """The property `name` as a whole number of at least `minimum`."""
    value = properties.get(name)
    if value is None:
        raise PlanError(f"{name} is missing: the experiment requires it")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PlanError(f"{name} must be a whole number of at least {minimum}, not {value!r}")
    return value


def choice(properties: Mapping[str, Value], name: str, allowed: tuple[str, ...]) -> str:
    """The property `name`, one of `allowed`."""
    value = properties.get(name)
    if value not in allowed:
        raise PlanError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return str(value)


def train_config(properties: Mapping[str, Value], dtypes: tuple[str, ...]) -> TrainConfig:
    """The run the properties describe (see the module docstring)."""
    preset = preset_named(properties.get("model_size"))
    if isinstance(preset, str):
        raise PlanError(preset)
    batch_size = whole_number(properties, "batch_size")
    max_length = whole_number(properties, "model_max_length")
    max_batches, max_seconds = stop_after(
        properties.get("duration"),
        batch_size=batch_size,
        max_length=max_length,
        samples_per_epoch=whole_number(properties, "samples_per_epoch"),
    )
    return TrainConfig(
        preset=preset,
        batch_size=batch_size,
        max_length=max_length,
        dtype=choice(properties, "dtype", dtypes),
        seed=whole_number(properties, "seed", minimum=0),
        max_batches=max_batches,
        max_seconds=max_seconds,
    )


RUN_UNITS = (TimeUnit.BATCH, TimeUnit.EPOCH, TimeUnit.SAMPLE, TimeUnit.TOKEN, TimeUnit.SECOND)
"""The units a run's `duration` may take: a single run has no maximum for `dur` to be a share
of, and `iter` counts nothing the model trains."""


def run_length(duration: Time) -> Time:
    """`duration` when a run can train it; a `ValueError` sentence otherwise (a worker refuses
    such a default at start rather than record every entity as invalid)."""
    if duration.unit not in RUN_UNITS:
        units = ", ".join(unit.value for unit in RUN_UNITS)
        raise ValueError(f"duration {duration} cannot be trained: give it in {units}")
    if duration.value <= 0:
        raise ValueError(f"duration must be above zero, not {duration}")
    return duration


def stop_after(
    duration: Value | None, *, batch_size: int, max_length: int, samples_per_epoch: int
) -> tuple[int | None, float | None]:
    """(batches, None) or (None, seconds): how long `duration` trains.

    Counted units become batches, rounding down but never below one batch.
    """
    if not isinstance(duration, str):
        raise PlanError(f"duration must be a time such as 50ba or 30sec, not {duration!r}")
    try:
        time = run_length(Time.parse(duration))
        if time.unit is TimeUnit.SECOND:
            return None, float(time.value)
        batches = time.to(
            TimeUnit.BATCH,
            batch_size=batch_size,
            tokens_per_sample=max_length,
            samples_per_epoch=samples_per_epoch,
        )
    except TimeError as error:
        raise PlanError(f"duration {duration}: {error}") from None
    except ValueError as error:
        raise PlanError(str(error)) from None
    return max(1, int(batches.value)), None
