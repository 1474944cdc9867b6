"""The actuator plugin interface: a catalog, and an async call that measures one entity.

An actuator plugin is a class registered under the entry-point group `discospace.actuators`:

    [project.entry-points."discospace.actuators"]
    synthetic = "discospace.actuator.synthetic:SyntheticActuator"

It declares its parameters as a pydantic model (`Parameters`), is built from them, names the
experiments it offers (`catalog()`, announced by the worker with `ActuatorRegistered`) and
measures one entity with one of them (`measure(task)`). A measurement ends in one of three ways:

- `ValidMeasurement`: the values of the experiment's target properties;
- `InvalidMeasurement`: the run gave no usable result (out of memory, diverged). It is a
  finding about the configuration: memoised in the sample store and never retried;
- `TransientFailure`: the infrastructure failed (node lost, preempted). Trying again may work,
  and the explorer retries it within the operation's `max_retries`.

`measure` may raise: the worker reports the exception as a failure that is not retried (an
error the plugin did not classify is not known to be transient). A cancelled measurement
(the worker stopping) publishes nothing, so another worker of the pool takes the request.

A plugin that runs code (a benchmark, a training job) is *isolated*: it sets
`isolated: ClassVar[bool] = True`, keeps its validated `Parameters` as `self.parameters` and
implements a synchronous `measure_blocking(task) -> Outcome` instead of `measure`. The worker
rebuilds it in a child process for every measurement (`discospace.actuator.isolation`), so a
crash, a hang or a memory blow-up ends the child, never the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel

from discospace.core import Entity, ExperimentSpec, ParameterizedExperiment
from discospace.core.canonical import Value
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

ENTRY_POINT_GROUP = "discospace.actuators"
"""Where actuator plugins are registered (Python entry points)."""


@dataclass(frozen=True)
class TransientFailure:
    """The measurement could not run this time; trying again may succeed."""

    reason: str


Outcome: TypeAlias = ValidMeasurement | InvalidMeasurement | TransientFailure
"""What one call of `Actuator.measure` returns."""


@dataclass(frozen=True)
class MeasurementTask:
    """One entity to measure with one parameterized experiment, as a plugin receives it."""

    request_id: str
    entity: Entity
    experiment: ParameterizedExperiment
    attempt: int = 1
    inputs: Mapping[str, Value] = field(default_factory=dict)
    """Observed values of other experiments a dependent experiment requires, by id."""

    @property
    def options(self) -> dict[str, Value]:
        """Every optional property of the experiment: defaults, overridden by its parameters."""
        return self.experiment.option_values

    @property
    def properties(self) -> dict[str, Value]:
        """Everything the experiment may read: entity values, options, then inputs."""
        return {**self.entity.as_dict(), **self.options, **self.inputs}


@runtime_checkable
class Actuator(Protocol):
    """A built actuator plugin, as the worker uses it."""

    name: str

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        """The experiments this actuator offers; each names this actuator."""
        ...

    async def measure(self, task: MeasurementTask) -> Outcome:
        """Measure `task.entity` with `task.experiment`."""
        ...


@runtime_checkable
class IsolatedActuator(Protocol):
    """A plugin measured in a child process: rebuilt there as `type(self)(self.parameters)`,
    so its class must be importable and its parameters picklable."""

    name: str
    isolated: ClassVar[bool]
    parameters: BaseModel

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        """The experiments this actuator offers; each names this actuator."""
        ...

    def measure_blocking(self, task: MeasurementTask) -> Outcome:
        """Measure `task.entity` with `task.experiment`, in the child process."""
        ...


AnyActuator: TypeAlias = Actuator | IsolatedActuator
"""What a worker runs: an async plugin, or an isolated one."""


def is_isolated(actuator: object) -> bool:
    """Whether the worker runs this plugin's measurements in child processes."""
    return bool(getattr(actuator, "isolated", False))


class ActuatorPlugin(Protocol):
    """What an entry point of `discospace.actuators` loads: a class built from parameters."""

    Parameters: ClassVar[type[BaseModel]]

    def __call__(self, parameters: BaseModel) -> AnyActuator: ...
