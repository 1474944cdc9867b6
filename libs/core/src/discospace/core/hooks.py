"""Pipeline hooks: pure functions from a pipeline's context to a result (the sandbox's hooks).

A hook is an entry point of group `discospace.hooks` (`load_hook(name)`): it takes a
`HookContext` (the space it works on, the measurements of the job named by `args.job`, every
earlier job's result, its own `args` with references resolved, a seed) and returns a JSON
dict, the job's result. It raises :class:`PipelineError` with one sentence when it cannot work.

The hooks shipped here:

- `k_sigma`: narrow each numeric property to mean ± k·sigma of the good valid entities (after
  Data-Juicer's k-sigma recipe refinement, which bounds each filter by mean ± k·std of a data
  statistic; this one narrows the searched properties around the best configurations, see
  libs/core/README.md); result `{"space", "narrowed"}`.
- `prune_invalid`: drop a listed value of a property when every measurement of an entity
  with that value was invalid; result `{"space", "pruned"}`.
- `top_k`: the k best entities for an objective; result `{"entities", "entity_ids", "values"}`.

An objective's value for an entity is read by core's shared rules (`discospace.core.results`:
a bare target is the first experiment that measures it, valid results and finite numbers
only), and better is the objective's `better`. Ties are broken by entity id, so the same rows
always give the same result.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from importlib.metadata import entry_points
from typing import TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    NonNegativeFloat,
    PositiveInt,
    ValidationError,
)
from pydantic_core import ErrorDetails

from discospace.core.canonical import normalise_value
from discospace.core.discovery import DiscoverySpace
from discospace.core.errors import DiscospaceError, PipelineError
from discospace.core.experiment import observed_property_id
from discospace.core.pipelines import (
    HOOK_GROUP,
    Direction,
    as_objective,
    first_of,
    first_problem,
    hook_names,
    references,
)
from discospace.core.properties import ConstitutiveProperty, domain_from_spec
from discospace.core.property_domains import PropertyDomain
from discospace.core.results import Objective, objective_source, result_value, target_of
from discospace.core.spec import PropertySpec, Scalar, SpaceSpec

__all__ = ["HOOK_GROUP", "Hook", "HookContext", "MeasuredRow", "hook_names", "load_hook"]

ResultValue = float | int | str | bool | None


@dataclass(frozen=True)
class MeasuredRow:
    """One measurement a hook reads: an entity, one parameterized experiment, its results."""

    entity_id: str
    values: Mapping[str, Scalar]
    """The entity's constitutive property values."""
    experiment: str
    """The parameterized experiment id."""
    results: Mapping[str, ResultValue]
    valid: bool


@dataclass(frozen=True)
class HookContext:
    """What a hook is given; it reads nothing else."""

    space: SpaceSpec
    space_id: str
    rows: Sequence[MeasuredRow]
    results: Mapping[str, Mapping[str, JsonValue]]
    args: Mapping[str, JsonValue]
    seed: int


Hook = Callable[[HookContext], dict[str, JsonValue]]


def load_hook(name: str) -> Hook:
    """The hook installed under `name` in group `discospace.hooks`."""
    found = [point for point in entry_points(group=HOOK_GROUP) if point.name == name]
    if not found:
        known = ", ".join(hook_names()) or "none is installed"
        raise PipelineError(f"hook '{name}' is not known: use {known}")
    hook = found[0].load()
    if not callable(hook):
        raise PipelineError(f"hook '{name}' ({found[0].value}) is not a function")
    return hook


# -- arguments --------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    job: str | None = Field(default=None, description="The job whose measurements are read.")
    space: str | None = Field(default=None, description="The space worked on (the runtime's).")


class HookObjective(BaseModel):
    """`{property, direction}` in a hook's args."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    property: str = Field(min_length=1)
    direction: Direction = "minimize"

    def objective(self) -> Objective:
        return as_objective(self.property, self.direction)


class KSigmaArgs(_Args):
    k: NonNegativeFloat = 3.0
    objective: HookObjective | None = None
    good_fraction: float = Field(default=0.5, gt=0, le=1)
    properties: tuple[str, ...] | None = None


class TopKArgs(_Args):
    k: PositiveInt
    objective: HookObjective


A = TypeVar("A", bound=_Args)

SHIPPED_ARGS: dict[str, type[_Args]] = {
    "k_sigma": KSigmaArgs,
    "prune_invalid": _Args,
    "top_k": TopKArgs,
}
"""The args each shipped hook takes: checked before a pipeline runs, not after its probe."""


def args_problem(hook: str, args: Mapping[str, JsonValue]) -> str | None:
    """Why a shipped hook would refuse `args`, in one sentence; None for args it takes and for
    a hook it does not know (a plugin checks its own). An arg holding a reference is known once
    it is replaced: only a misspelt name of one is refused now, the other args all are."""
    model = SHIPPED_ARGS.get(hook)
    if model is None:
        return None
    data = dict(args)
    try:
        model.model_validate(data)
    except ValidationError as error:
        problems = [e for e in error.errors() if not _referenced(data, e)]
        if problems:
            return first_of(problems, data, f"hook '{hook}' args")
    return None


def _referenced(data: Mapping[str, JsonValue], error: ErrorDetails) -> bool:
    """Whether `error` is about an arg whose value holds a reference (so may be right once
    it is replaced)."""
    name = error["loc"][0] if error["loc"] else None
    if error["type"] == "extra_forbidden" or not isinstance(name, str) or name not in data:
        return False
    return bool(references(data[name]))


def _args(model: type[A], hook: str, context: HookContext) -> A:
    try:
        return model.model_validate(dict(context.args))
    except ValidationError as error:
        raise PipelineError(
            first_problem(error, dict(context.args), f"hook '{hook}' args")
        ) from None


def _job(args: _Args) -> str:
    return f"job '{args.job}'" if args.job else "the earlier jobs"


# -- reading the rows -------------------------------------------------------------------------


@dataclass(frozen=True)
class _AsResult:
    """A row as core's `results.Result` reads it."""

    row: MeasuredRow

    @property
    def entity_id(self) -> str:
        return self.row.entity_id

    @property
    def experiment_id(self) -> str:
        return self.row.experiment

    @property
    def is_valid(self) -> bool:
        return self.row.valid

    @property
    def values(self) -> Mapping[str, object]:
        return self.row.results


def _observed_ids(rows: Sequence[MeasuredRow]) -> list[str]:
    """The observed property ids the rows hold, experiments in the order they first appear."""
    ids = (observed_property_id(row.experiment, target) for row in rows for target in row.results)
    return list(dict.fromkeys(ids))


def _scores(rows: Sequence[MeasuredRow], objective: Objective, where: str) -> dict[str, float]:
    """Entity id -> its objective value (the first valid one read)."""
    source = objective_source(objective.property, _observed_ids(rows))
    if source is None and not any(row.valid for row in rows):
        return {}
    if source is None:
        raise PipelineError(f"no measurement of {where} has '{objective.property}'")
    scores: dict[str, float] = {}
    for row in rows:
        value = result_value(_AsResult(row), source)
        if value is not None:
            scores.setdefault(row.entity_id, value)
    return scores


def _ranked(scores: Mapping[str, float], objective: Objective) -> list[str]:
    """Entity ids best first; equal values in entity id order."""
    sign = -1.0 if objective.direction == "max" else 1.0
    return sorted(scores, key=lambda entity: (sign * scores[entity], entity))


def _entity_values(rows: Sequence[MeasuredRow]) -> dict[str, Mapping[str, Scalar]]:
    found: dict[str, Mapping[str, Scalar]] = {}
    for row in rows:
        found.setdefault(row.entity_id, row.values)
    return found


def _all_valid(rows: Sequence[MeasuredRow]) -> set[str]:
    invalid = {row.entity_id for row in rows if not row.valid}
    return {row.entity_id for row in rows} - invalid


def _result(space: SpaceSpec, **rest: JsonValue) -> dict[str, JsonValue]:
    """A hook's result with the space it made, checked to be a space."""
    try:
        DiscoverySpace.from_spec(space)
    except DiscospaceError as error:
        raise PipelineError(f"the refined space is not a space: {error}") from None
    return {"space": space.model_dump(mode="json"), **rest}


# -- top_k ------------------------------------------------------------------------------------


def top_k(context: HookContext) -> dict[str, JsonValue]:
    """The k best entities of a job for an objective, best first (ties by entity id)."""
    args = _args(TopKArgs, "top_k", context)
    objective = args.objective.objective()
    scores = _scores(context.rows, objective, _job(args))
    if not scores:
        raise PipelineError(f"top_k found no valid value of '{objective.property}' in {_job(args)}")
    best = _ranked(scores, objective)[: args.k]
    values = _entity_values(context.rows)
    return {
        "entities": [dict(values[entity]) for entity in best],
        "entity_ids": list(best),
        "values": [scores[entity] for entity in best],
        # the best's value, where a trials' objective naming this job reads a job's best
        "best_values": {target_of(objective.property): scores[best[0]]},
    }


# -- prune_invalid ----------------------------------------------------------------------------


def prune_invalid(context: HookContext) -> dict[str, JsonValue]:
    """Drop each listed value of a property that only invalid measurements have; a value never
    measured stays, and a property keeps its values when every one of them would go."""
    _args(_Args, "prune_invalid", context)
    space = DiscoverySpace.from_spec(context.space)
    specs = list(context.space.entity_space)
    pruned: dict[str, JsonValue] = {}
    for index, prop in enumerate(space.entity_space.properties):
        dropped = _invalid_values(prop, context.rows)
        if dropped and len(dropped) < prop.domain.size:
            pruned[prop.name] = list(dropped)
            kept = tuple(v for v in prop.domain.values if v not in dropped)
            specs[index] = _with_values(specs[index], kept)
    refined = context.space.model_copy(update={"entity_space": tuple(specs)})
    return _result(refined, pruned=pruned)


def _invalid_values(prop: ConstitutiveProperty, rows: Sequence[MeasuredRow]) -> list[Scalar]:
    """The listed values of `prop` that rows have, all of them invalid, in the domain's order."""
    if prop.domain.explicit_values is None:
        return []
    seen: dict[Scalar, bool] = {}
    for row in rows:
        value = prop.domain.normalise(row.values.get(prop.name))
        if value is not None:
            seen[value] = seen.get(value, False) or row.valid
    return [v for v in prop.domain.values if v in seen and not seen[v]]


def _with_values(spec: PropertySpec, values: Sequence[Scalar]) -> PropertySpec:
    """`spec` listing `values` instead of its values or range."""
    kind = None if spec.type == "continuous" else spec.type
    update = {"values": tuple(values), "range": None, "interval": None, "type": kind}
    return _checked(spec.model_copy(update=update))


def _checked(spec: PropertySpec) -> PropertySpec:
    """`spec`, without its probability law when the law does not fit the new domain."""
    try:
        domain_from_spec(spec)
    except DiscospaceError:
        return spec.model_copy(update={"probability": None})
    return spec


# -- k_sigma ----------------------------------------------------------------------------------


def k_sigma(context: HookContext) -> dict[str, JsonValue]:
    """Narrow numeric properties to mean ± k·sigma of the good valid entities.

    Good: the best `good_fraction` (rounded up, at least one) of the entities with a valid
    objective value, or, without an objective, every entity whose measurements are all valid.
    Sigma is the sample standard deviation (n - 1, as pandas' `describe` gives Data-Juicer's
    analyzer; 0 for one entity). The interval is clamped to the property's domain; a listed
    or stepped domain keeps its values inside it, and when none is inside, the good entities'.
    """
    args = _args(KSigmaArgs, "k_sigma", context)
    space = DiscoverySpace.from_spec(context.space)
    good = _good_entities(context.rows, args)
    values = _entity_values(context.rows)
    chosen = _numeric_properties(space, args.properties)
    specs = list(context.space.entity_space)
    narrowed: dict[str, JsonValue] = {}
    for index, prop in enumerate(space.entity_space.properties):
        if prop.name in chosen:
            seen = [_number(values[entity].get(prop.name), prop.name) for entity in good]
            specs[index], bounds = _narrow(specs[index], prop.domain, seen, args.k)
            narrowed[prop.name] = list(bounds)
    refined = context.space.model_copy(update={"entity_space": tuple(specs)})
    return _result(refined, narrowed=narrowed)


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PipelineError(f"k_sigma read {value!r} for '{name}', which is not a number")
    return float(value)


def _good_entities(rows: Sequence[MeasuredRow], args: KSigmaArgs) -> list[str]:
    if args.objective is None:
        good = sorted(_all_valid(rows))
    else:
        objective = args.objective.objective()
        ranked = _ranked(_scores(rows, objective, _job(args)), objective)
        good = ranked[: max(1, math.ceil(args.good_fraction * len(ranked)))]
    if not good:
        raise PipelineError(f"k_sigma found no valid entity in {_job(args)}")
    return good


def _numeric_properties(space: DiscoverySpace, named: Sequence[str] | None) -> set[str]:
    """The properties to narrow: those named, or every numeric one with more than one value."""
    properties = {prop.name: prop for prop in space.entity_space.properties}
    if named is None:
        return {n for n, p in properties.items() if _numeric(p.domain) and p.domain.size > 1}
    problem = numeric_problem(space, named)
    if problem is not None:
        raise PipelineError(problem)
    return set(named)


NARROWING = ("k_sigma",)
"""The shipped hooks whose `properties` arg names properties of their space to narrow."""


def numeric_problem(space: DiscoverySpace, named: Sequence[str]) -> str | None:
    """Why k_sigma cannot narrow the properties `named` of `space`, in one sentence, or None
    (a refined space keeps its properties' names and kinds: the pipeline's space says)."""
    properties = {prop.name: prop for prop in space.entity_space.properties}
    for name in named:
        if name not in properties:
            return f"k_sigma cannot narrow '{name}': the space has no such property"
        if not _numeric(properties[name].domain):
            return f"k_sigma narrows numeric properties only, not '{name}'"
    return None


def _numeric(domain: PropertyDomain) -> bool:
    return domain.kind in ("discrete", "continuous") and domain.is_numeric


Narrowed = tuple[PropertySpec, tuple[float, float]]
"""The narrowed property, and the [low, high] of the values it keeps."""


def _narrow(
    spec: PropertySpec, domain: PropertyDomain, seen: Sequence[float], k: float
) -> Narrowed:
    mean = statistics.fmean(seen)
    sigma = statistics.stdev(seen) if len(seen) > 1 else 0.0
    low, high = mean - k * sigma, mean + k * sigma
    if domain.kind == "continuous":
        return _narrow_continuous(spec, domain, low, high, mean)
    if domain.explicit_values is not None:
        listed = [float(v) for v in domain.values]
        kept = [v for v in listed if low <= v <= high] or _seen_or_nearest(listed, seen, mean)
        return _with_values(spec, [normalise_value(v) for v in kept]), (min(kept), max(kept))
    return _narrow_grid(spec, domain, (low, high), seen)


def _seen_or_nearest(listed: Sequence[float], seen: Sequence[float], mean: float) -> list[float]:
    """The listed values the good entities had; else (their rows lie outside the space) the
    listed value nearest their mean: a narrowed space never leaves the space it refines."""
    had = set(seen)
    return [v for v in listed if v in had] or [min(listed, key=lambda v: (abs(v - mean), v))]


def _narrow_continuous(
    spec: PropertySpec, domain: PropertyDomain, low: float, high: float, mean: float
) -> Narrowed:
    floor, ceiling = float(domain.low or 0), float(domain.high or 0)
    low, high = max(low, floor), min(high, ceiling)
    if low < high:
        update = {"range": (low, high), "type": "continuous"}  # whole-number ends stay continuous
        return _checked(spec.model_copy(update=update)), (low, high)
    point = min(max(mean, floor), ceiling)  # the mean, inside the domain
    return _with_values(spec, [normalise_value(point)]), (point, point)


def _narrow_grid(
    spec: PropertySpec, domain: PropertyDomain, bounds: tuple[float, float], seen: Sequence[float]
) -> Narrowed:
    """A stepped range narrowed to its grid points inside `bounds` (its high then excluded)."""
    start, step = Decimal(str(domain.low)), Decimal(str(domain.interval))

    def index(value: float) -> Decimal:
        return (Decimal(str(value)) - start) / step

    last = int(domain.size) - 1
    lowest_point = float(start)
    highest_point = float(start + last * step)
    low, high = max(bounds[0], lowest_point), min(bounds[1], highest_point)  # also: k * sigma = inf
    first = max(0, math.ceil(index(low)))
    final = min(last, math.floor(index(high)))
    if first > final:  # no grid point within k sigma: the points the good entities had
        first, final = (min(max(round(index(v)), 0), last) for v in (min(seen), max(seen)))
    lowest, highest, beyond = (
        normalise_value(float(start + i * step)) for i in (first, final, final + 1)
    )
    update = {"range": (lowest, beyond)}
    return _checked(spec.model_copy(update=update)), (float(lowest), float(highest))
