"""Experiments offered by actuators, their parameterizations and observed properties.

An experiment declares the target properties it measures, the properties it requires
(constitutive names, or observed property ids of another experiment, which makes it dependent)
and optional properties with defaults. A parameterization overrides some defaults and yields a
distinct parameterized experiment id: ``<experiment>-<k1.v1-k2.v2>`` (keys sorted). An observed
property is one target of one parameterized experiment: ``<parameterized experiment id>.<target>``.
"""

import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from discospace.core.canonical import (
    Value,
    canonical_json,
    format_value,
    normalise_value,
    value_kind,
)
from discospace.core.errors import ExperimentError
from discospace.core.spec import ExperimentRef, ExperimentSpec


def parameterized_experiment_id(experiment: str, parameterization: Mapping[str, object]) -> str:
    """``experiment`` alone, or ``experiment-k1.v1-k2.v2`` with keys sorted, values normalised."""
    if not parameterization:
        return experiment
    pairs = sorted((k, normalise_value(v)) for k, v in parameterization.items())
    return experiment + "-" + "-".join(f"{k}.{format_value(v)}" for k, v in pairs)


def observed_property_id(experiment_id: str, target: str) -> str:
    """The id of target ``target`` measured by parameterized experiment ``experiment_id``."""
    return f"{experiment_id}.{target}"


def split_observed_property_id(observed: str) -> tuple[str, str]:
    """(parameterized experiment id, target): targets hold no '.', experiment ids may."""
    experiment, dot, target = observed.rpartition(".")
    if not dot or not experiment or not target:
        raise ExperimentError(f"'{observed}' is not an observed property id (experiment.target)")
    return experiment, target


def is_observed_property_id(name: str) -> bool:
    """Constitutive property names hold no '.', observed property ids always do."""
    return "." in name


@dataclass(frozen=True, eq=False)
class Experiment:
    """A catalog entry: what an actuator can measure, and what it needs."""

    actuator: str
    identifier: str
    target_properties: tuple[str, ...]
    required_properties: tuple[str, ...] = ()
    optional_properties: Mapping[str, Value] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        self._check()
        defaults = {k: normalise_value(v) for k, v in self.optional_properties.items()}
        object.__setattr__(self, "optional_properties", MappingProxyType(defaults))

    @classmethod
    def from_spec(cls, spec: ExperimentSpec) -> "Experiment":
        return cls(
            actuator=spec.actuator,
            identifier=spec.experiment,
            target_properties=spec.target_properties,
            required_properties=spec.required_properties,
            optional_properties=spec.optional_properties,
            description=spec.description,
        )

    def to_spec(self) -> ExperimentSpec:
        return ExperimentSpec(
            actuator=self.actuator,
            experiment=self.identifier,
            description=self.description,
            target_properties=self.target_properties,
            required_properties=self.required_properties,
            optional_properties=dict(self.optional_properties),
        )

    def _fail(self, problem: str) -> ExperimentError:
        return ExperimentError(f"experiment '{self.identifier}' {problem}")

    def _check(self) -> None:
        if not self.target_properties:
            raise self._fail("declares no target property")
        for target in self.target_properties:
            if "." in target or not target.strip():
                raise self._fail(f"has the target '{target}': targets are non-empty, without '.'")
        for option in self.optional_properties:
            if "." in option or not option.strip():
                raise self._fail(
                    f"has the option '{option}': options are non-empty, without '.' (a "
                    "parameterized id joins each option to its value with one)"
                )
        names = [*self.target_properties, *self.required_properties, *self.optional_properties]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise self._fail(f"declares {', '.join(repeated)} more than once")

    @property
    def key(self) -> tuple[str, str]:
        return (self.actuator, self.identifier)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Experiment):
            return NotImplemented
        return self.to_spec() == other.to_spec()

    def __hash__(self) -> int:
        return hash(self.key)

    def parameterize(
        self, parameterization: Mapping[str, object] | None = None
    ) -> "ParameterizedExperiment":
        """This experiment with some optional defaults overridden.

        Values equal to the default are dropped, so they do not create a distinct id.
        """
        overrides: dict[str, Value] = {}
        for name, raw in (parameterization or {}).items():
            if name not in self.optional_properties:
                raise self._fail(f"has no optional property '{name}' to parameterize")
            value, default = normalise_value(raw), self.optional_properties[name]
            if value_kind(value) != value_kind(default):
                raise self._fail(
                    f"expects {_KIND[value_kind(default)]} for '{name}' (default "
                    f"{_shown(default)}), not {_THE[value_kind(value)]} {_shown(value)}"
                )
            if value != default:
                overrides[name] = value
        for name, value in overrides.items():
            self._check_unambiguous(name, format_value(value))
        return ParameterizedExperiment(self, MappingProxyType(overrides))

    def _check_unambiguous(self, name: str, text: str) -> None:
        """A value whose text holds `-<option>.` would make the id read as another
        parameterization (`b: c-d.e` and `b: c, d: e` both give `exp-b.c-d.e`), so the store
        would hand one's results to the other."""
        for option in self.optional_properties:
            if f"-{option}." in text:
                raise self._fail(
                    f"cannot take {text!r} for '{name}': its id would read as another "
                    f"parameterization ('-{option}.' names the option '{option}'); "
                    "choose a value without it"
                )


@dataclass(frozen=True)
class ParameterizedExperiment:
    """An experiment with its parameterization: what a measurement space holds."""

    experiment: Experiment
    parameterization: Mapping[str, Value]

    @property
    def id(self) -> str:
        return parameterized_experiment_id(self.experiment.identifier, self.parameterization)

    @property
    def actuator(self) -> str:
        return self.experiment.actuator

    @property
    def option_values(self) -> dict[str, Value]:
        """Every optional property with its value: defaults, overridden by the parameterization."""
        return {**self.experiment.optional_properties, **self.parameterization}

    @property
    def observed_property_ids(self) -> tuple[str, ...]:
        return tuple(observed_property_id(self.id, t) for t in self.experiment.target_properties)

    @property
    def required_constitutive(self) -> tuple[str, ...]:
        return tuple(
            p for p in self.experiment.required_properties if not is_observed_property_id(p)
        )

    @property
    def required_observed(self) -> tuple[str, ...]:
        return tuple(p for p in self.experiment.required_properties if is_observed_property_id(p))

    @property
    def is_dependent(self) -> bool:
        return bool(self.required_observed)

    @property
    def depends_on(self) -> frozenset[str]:
        """Parameterized ids of the experiments whose results this one needs."""
        return frozenset(split_observed_property_id(p)[0] for p in self.required_observed)

    def measured_as(self, given: Collection[str] = ()) -> str:
        """What a measurement of this experiment means for entities that give the properties
        `given` (their entity space's names), as one text (`measured_as`)."""
        return measured_as(self.experiment, self.parameterization, given)

    def to_ref(self) -> ExperimentRef:
        return ExperimentRef(
            actuator=self.actuator,
            experiment=self.experiment.identifier,
            parameterization=dict(self.parameterization),
        )

    def __hash__(self) -> int:
        return hash((self.actuator, self.id))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParameterizedExperiment):
            return NotImplemented
        return (self.actuator, self.id) == (other.actuator, other.id)


_KIND = {"booleans": "a boolean", "numbers": "a number", "strings": "text"}
_THE = {"booleans": "the boolean", "numbers": "the number", "strings": "the text"}


def measured_as(
    experiment: Experiment,
    parameterization: Mapping[str, Value] = {},
    given: Collection[str] = (),
) -> str:
    """What a measurement of `experiment` with `parameterization`, of an entity that gives the
    properties `given`, depends on, as one text: its targets and required properties (as sets),
    each option with the value it is measured with (the entity's own when it gives the option,
    else the parameterization's, else the default; a value's kind included: `true` is not 1),
    and any option set that the experiment lacks; not its description or the order it lists
    them in. Two definitions of one experiment id give the same text exactly when a result of
    one means what a result of the other would (a pool redeployed with a new default of an
    option every entity or the parameterization sets measures the same)."""
    options = {**experiment.optional_properties}
    options.update((name, value) for name, value in parameterization.items() if name in options)
    shown: dict[str, list[object]] = {
        name: [type(value).__name__, value] for name, value in options.items()
    }
    shown.update((name, ["entity", None]) for name in given if name in options)
    return canonical_json(
        {
            "targets": sorted(experiment.target_properties),
            "required": sorted(experiment.required_properties),
            "options": shown,
            "unknown_options": sorted(set(parameterization) - set(options)),
        }
    )


def _shown(value: Value) -> str:
    """A value as written, text quoted (the kind a sentence about kinds names: 8 and "8")."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else format_value(value)


class ExperimentCatalog:
    """The experiments actuators offer, by (actuator, experiment id)."""

    def __init__(self, experiments: Iterable[Experiment | ExperimentSpec] = ()) -> None:
        self._experiments: dict[tuple[str, str], Experiment] = {}
        for item in experiments:
            self.add(item)

    def add(self, item: Experiment | ExperimentSpec) -> Experiment:
        experiment = Experiment.from_spec(item) if isinstance(item, ExperimentSpec) else item
        self._experiments[experiment.key] = experiment
        return experiment

    def get(self, actuator: str, experiment: str) -> Experiment | None:
        return self._experiments.get((actuator, experiment))

    def __len__(self) -> int:
        return len(self._experiments)

    def __iter__(self) -> Iterator[Experiment]:
        return iter(self._experiments.values())

    def resolve(self, ref: ExperimentRef) -> ParameterizedExperiment:
        """The parameterized experiment a measurement space refers to."""
        experiment = self.get(ref.actuator, ref.experiment)
        if experiment is None:
            raise ExperimentError(
                f"experiment '{ref.experiment}' of actuator '{ref.actuator}' is not in the catalog"
            )
        return experiment.parameterize(ref.parameterization)
