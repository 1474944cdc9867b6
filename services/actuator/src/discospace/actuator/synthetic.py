"""The `synthetic` actuator: a deterministic stand-in for real hardware, for tests and demos.

Measuring an entity takes `latency_s`, then:

1. fails transiently with probability `failure_rate`; whether it does is a pure function of
   (seed, entity id, experiment id, attempt), so a test knows which attempts fail, and a
   retry (the next attempt) draws again;
2. is invalid ("out of memory") when the product of the `invalid_when` properties (by default
   `batch_size * model_max_length`) is above a threshold, as a too large batch would be;
3. otherwise yields, per target property, a smooth deterministic function of the entity:
   a seeded scale times `(1 + |x|) ** w` per numeric property `x` (w a seeded weight in
   [-0.5, 1)) times a seeded level per categorical value. The same entity always gets the same
   values, on every machine, so an optimizer has a landscape to climb.

Entity values, the experiment's options and the inputs of a dependent experiment all enter.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from discospace.actuator.plugin import MeasurementTask, Outcome, TransientFailure
from discospace.core import ExperimentSpec
from discospace.core.canonical import Value, format_value, is_number
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.core.permutation import unit_interval
from discospace.core.spec import Scalar

ACTUATOR_NAME = "synthetic"
_MAX_LOG = 700.0  # exp(700) is finite; a larger log is clipped there


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SyntheticExperiment(_Frozen):
    """One experiment the synthetic actuator offers."""

    experiment: str = Field(min_length=1, examples=["benchmark"])
    description: str = "Synthetic measurement: a deterministic function of the entity."
    target_properties: tuple[str, ...] = Field(default=("throughput", "peak_memory"), min_length=1)
    required_properties: tuple[str, ...] = ()
    optional_properties: dict[str, Scalar] = Field(default_factory=dict)

    def to_spec(self) -> ExperimentSpec:
        return ExperimentSpec(actuator=ACTUATOR_NAME, **self.model_dump())


class InvalidRule(_Frozen):
    """An entity is invalid when the product of these properties is above `above`."""

    product_of: tuple[str, ...] = Field(default=("batch_size", "model_max_length"), min_length=1)
    above: float = Field(
        default=2**19, allow_inf_nan=False, description="Largest product that still fits."
    )
    reason: str = Field(default="out of memory", min_length=1)

    def violated_by(self, properties: Mapping[str, Value]) -> bool:
        """True when every property of the rule is a number and their product is too big."""
        product = 1.0
        for name in self.product_of:
            factor = properties.get(name)
            if not isinstance(factor, int | float) or isinstance(factor, bool):
                return False
            product *= factor
        return product > self.above


DEFAULT_EXPERIMENTS = (
    SyntheticExperiment(experiment="benchmark", optional_properties={"steps": 10}),
)


class SyntheticParameters(_Frozen):
    """What `DISCOSPACE_ACTUATOR_PARAMETERS` may set for the synthetic actuator."""

    experiments: tuple[SyntheticExperiment, ...] = Field(
        default=DEFAULT_EXPERIMENTS, min_length=1, description="The catalog it offers."
    )
    latency_s: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="How long each measurement takes."
    )
    failure_rate: float = Field(
        default=0.0, ge=0, le=1, description="Chance that an attempt fails transiently."
    )
    seed: int = Field(default=0, description="Seeds the values and the failures.")
    invalid_when: InvalidRule | None = Field(
        default_factory=InvalidRule, description="When a result is invalid; null: never."
    )


def fails_transiently(seed: int, task: MeasurementTask, rate: float) -> bool:
    """Whether this attempt fails: a pure function of (seed, entity, experiment, attempt)."""
    draw = unit_interval(seed, "transient", task.entity.id, task.experiment.id, task.attempt)
    return draw < rate


def synthetic_values(
    seed: int, experiment: str, targets: tuple[str, ...], properties: Mapping[str, Value]
) -> dict[str, float]:
    """The value of each target for these properties (see the module docstring)."""
    return {target: _value(seed, f"{experiment}.{target}", properties) for target in targets}


def _value(seed: int, target: str, properties: Mapping[str, Value]) -> float:
    log_value = math.log(10) * (1 + 3 * unit_interval(seed, "scale", target))
    for name, value in sorted(properties.items()):
        if is_number(value):
            weight = 1.5 * unit_interval(seed, "weight", target, name) - 0.5
            log_value += weight * math.log1p(abs(float(value)))
        else:
            level = 0.5 + unit_interval(seed, "level", target, name, format_value(value))
            log_value += math.log(level)
    return float(f"{math.exp(min(log_value, _MAX_LOG)):.6g}")


class SyntheticActuator:
    """A deterministic actuator with configurable latency, failures and invalid results."""

    name = ACTUATOR_NAME
    Parameters = SyntheticParameters

    def __init__(self, parameters: SyntheticParameters | None = None) -> None:
        self.parameters = parameters or SyntheticParameters()

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        return tuple(experiment.to_spec() for experiment in self.parameters.experiments)

    async def measure(self, task: MeasurementTask) -> Outcome:
        settings = self.parameters
        if settings.latency_s:
            await asyncio.sleep(settings.latency_s)
        if fails_transiently(settings.seed, task, settings.failure_rate):
            return TransientFailure(f"synthetic transient failure (attempt {task.attempt})")
        properties = task.properties
        rule = settings.invalid_when
        if rule is not None and rule.violated_by(properties):
            return InvalidMeasurement(reason=rule.reason)
        experiment = task.experiment.experiment
        values = synthetic_values(
            settings.seed, experiment.identifier, experiment.target_properties, properties
        )
        return ValidMeasurement(values=values)
