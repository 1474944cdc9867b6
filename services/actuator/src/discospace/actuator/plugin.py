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

What a plugin returns is checked before it becomes an event (`checked_outcome`): a valid
measurement holds a value for every target its experiment declares and nothing else, each a
string, a whole number within 64 bits, a finite real number or a boolean; an invalid one and a
transient failure carry a reason. Anything else is the plugin breaking this contract, not a
finding about the configuration: the worker fails the measurement without a retry and without
memoising it, saying what was wrong ("actuator 'x' returned no value for target 'y' ...").

A plugin that runs code (a benchmark, a training job) is *isolated*: it sets
`isolated: ClassVar[bool] = True`, keeps its validated `Parameters` as `self.parameters` and
implements a synchronous `measure_blocking(task) -> Outcome` instead of `measure`. The worker
rebuilds it in a child process for every measurement (`discospace.actuator.isolation`), so a
crash, a hang or a memory blow-up ends the child, never the worker.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ValidationError

from discospace.core import Entity, Experiment, ExperimentSpec, ParameterizedExperiment
from discospace.core.canonical import Value, beyond_64_bits
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.events.envelope import MAX_REASON_CHARS, shortened

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
        """Everything the experiment may read: options, then entity values, then inputs. A
        property the entity holds wins over the experiment's optional value of the same name,
        so a space may explore an option (the rule every actuator follows; replay and the
        synthetic actuator, which read this, served the option's default instead)."""
        return {**self.options, **self.entity.as_dict(), **self.inputs}


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


# -- what a plugin may return ----------------------------------------------------------------

_VALUE_KINDS = "a string, a whole number, a real number or a boolean"


def checked_outcome(outcome: object, experiment: Experiment) -> Outcome | str:
    """The outcome as an event can carry it, or what is wrong with it, to follow "returned"
    in a sentence ("no value for target 'y' of experiment 'e'").

    The outcome is rebuilt from its parts, so one made without validation (`model_construct`,
    or unpickled from a child process) is held to the same rules as one made with it; anything
    in it that the rules cannot even read is what is wrong with it, never an exception (one
    raised here left a started measurement without an answer).
    """
    try:
        return _checked(outcome, experiment)
    except Exception as error:  # a part of a kind no rule foresaw
        return f"an outcome that cannot be checked ({described(error)})"


def _checked(outcome: object, experiment: Experiment) -> Outcome | str:
    if isinstance(outcome, TransientFailure):
        reason = _reason(outcome)
        if reason is None:
            return "a transient failure without a reason"
        return dataclasses.replace(outcome, reason=reason)
    if isinstance(outcome, InvalidMeasurement):
        reason = _reason(outcome)
        if reason is None:
            return "an invalid measurement without a reason"
        return InvalidMeasurement(reason=reason)
    if isinstance(outcome, ValidMeasurement):
        return _checked_valid(outcome, experiment)
    return f"{type(outcome).__name__}, not an outcome"


def _reason(outcome: object) -> str | None:
    """The outcome's reason, cut to `MAX_REASON_CHARS`, what is not UTF-8 escaped (a path's
    undecodable byte: `caf\\udce9`); None when it has none (or not text)."""
    reason = getattr(outcome, "reason", None)
    if not isinstance(reason, str) or not reason.strip():
        return None
    return shortened(utf8_text(reason))


def _checked_valid(outcome: ValidMeasurement, experiment: Experiment) -> Outcome | str:
    values = getattr(outcome, "values", None)
    if not isinstance(values, Mapping) or not values:
        return "a valid measurement without values"
    problem = _values_problem(values, experiment)
    if problem is None:
        given = getattr(outcome, "uncertainty", None)
        uncertainty = {} if given is None else given
        problem = _uncertainty_problem(uncertainty, values)
    if problem is not None:
        return problem
    plain = {str(name): _plain(value) for name, value in values.items()}
    spreads = {str(name): float(spread) for name, spread in uncertainty.items()}
    return ValidMeasurement(values=plain, uncertainty=spreads or None)


def _values_problem(values: Mapping[object, object], experiment: Experiment) -> str | None:
    """What is wrong with a valid measurement's values: a target missing, a name the
    experiment does not declare, a value an event cannot carry."""
    targets = experiment.target_properties
    for name in targets:
        if name not in values:
            return f"no value for target '{name}' of experiment '{experiment.identifier}'"
    for name, value in values.items():
        if name not in targets:
            return (
                f"a value for {name!r}, which experiment '{experiment.identifier}' does not "
                "declare as a target"
            )
        problem = _value_problem(value)
        if problem is not None:
            return f"a value for '{name}' {problem}"
    return None


def _value_problem(value: object) -> str | None:
    """Why `value` is no property value an event can carry (JSON, 64-bit integers), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if beyond_64_bits(value):
            return f"of {value.bit_length()} bits, outside 64-bit integers"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"that is not a finite number ({value})"
    if isinstance(value, str):
        return "that is not UTF-8 text (a lone surrogate)" if _not_utf8(value) else None
    return f"of type {type(value).__name__}, not {_VALUE_KINDS}"


def _uncertainty_problem(uncertainty: object, values: Mapping[object, object]) -> str | None:
    if not isinstance(uncertainty, Mapping):
        return f"an uncertainty of type {type(uncertainty).__name__}, not a mapping"
    for name, spread in uncertainty.items():
        if name not in values:
            return f"an uncertainty for {name!r}, which has no value"
        number = isinstance(spread, int | float) and not isinstance(spread, bool)
        if not number or _value_problem(spread) is not None or spread < 0:
            return f"an uncertainty for '{name}' that is not a finite number >= 0"
    return None


def described(error: BaseException, limit: int = MAX_REASON_CHARS) -> str:
    """`ValueError: bad batch`, at most `limit` characters, even for an exception whose message
    is huge, cannot be built or is not UTF-8 text (an event would refuse it, and the request
    would never be answered); pydantic's ValidationError in one line, its first problem."""
    try:
        message = _validation_summary(error) if isinstance(error, ValidationError) else str(error)
    except Exception:
        message = "(its message cannot be shown)"
    message = utf8_text(message)
    return shortened(
        f"{type(error).__name__}: {message}" if message else type(error).__name__, limit
    )


def _validation_summary(error: ValidationError) -> str:
    """`ValidMeasurement: values.t: Input should be a valid number (and 1 more problem)`; the
    branches of one union field (`values.t.bool`, `values.t.int`...) as one problem of the
    field, their messages joined."""
    problems = error.errors(include_url=False, include_input=False)
    if not problems:
        return error.title
    places = {tuple(problem["loc"]) for problem in problems}
    field = {place[:-1] for place in places}
    if len(problems) > 1 and len(field) == 1 and all(places):
        [where_parts] = field
        messages = list(dict.fromkeys(problem["msg"] for problem in problems))
        return _problem(error.title, where_parts, "; ".join(messages), 0)
    first = problems[0]
    return _problem(error.title, tuple(first["loc"]), first["msg"], len(problems) - 1)


def _problem(title: str, where: tuple[object, ...], message: str, more: int) -> str:
    place = ".".join(str(part) for part in where)
    rest = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{title}: {place + ': ' if place else ''}{message}{rest}"


def utf8_text(text: str) -> str:
    """`text` with what cannot be UTF-8 (lone surrogates) written as backslash escapes."""
    if not _not_utf8(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _plain(value: object) -> Value:
    """A checked value as the built-in type it is a subclass of (numpy's float64 is a float)."""
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    raise TypeError(f"not a property value: {type(value).__name__}")
