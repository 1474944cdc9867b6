"""An entity space as Optuna distributions, and Optuna parameters back as entities.

The mapping keeps each domain's meaning:

- categorical values -> `CategoricalDistribution` over them (numbers declared `type: categorical`
  too: the file says their order means nothing);
- discrete values that form an arithmetic range (explicit `[1, 2, 3]`, or range + interval) ->
  `IntDistribution` / `FloatDistribution` with that step, so the sampler knows their order;
- other discrete values (`[2, 4, 8]`) -> `CategoricalDistribution` over the values, or, for
  samplers that need numbers (CMA-ES), their index in ascending order (`ordinal`);
- continuous ranges -> `FloatDistribution` (a normal probability is not passed on: Optuna
  samples its own way);
- identifier domains cannot be searched (they have no values to suggest).

Each dimension also gives a coordinate in [0, 1] (numbers: rank or position in the range) or
the value itself (categories), from which `candidates.py` finds the nearest free point.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from discospace.core import DiscospaceError, Entity, EntitySpace, PropertyDomain
from discospace.core.canonical import Value, is_number


class SearchSpaceError(DiscospaceError):
    """An entity space that an Optuna sampler cannot search."""


@dataclass(frozen=True)
class Dimension:
    """One constitutive property as one Optuna parameter."""

    name: str
    domain: PropertyDomain
    distribution: BaseDistribution
    ordinal: bool = False
    """The parameter is the index of the value in the ascending list of values."""

    @cached_property
    def _ascending(self) -> tuple[Value, ...]:
        listed = self.domain.explicit_values
        return tuple(sorted(listed)) if listed is not None and not self.is_category else ()

    @cached_property
    def _rank(self) -> dict[Value, int]:
        return {value: rank for rank, value in enumerate(self._ascending)}

    def param(self, value: Value) -> Value:
        """The parameter of a (canonical) value of the domain."""
        if self.ordinal and self.domain.is_range:
            return self.domain.index_of(value)
        return self._rank[value] if self.ordinal else value

    def value(self, param: object) -> object:
        """The domain value a parameter stands for (not normalised yet).

        A stepped float may come back a rounding away from the listed value it stands for
        (0.30000000000000004 for 0.3): listed numbers are snapped to the nearest.
        """
        if self.ordinal and self.domain.is_range:
            return self.domain.value_at(int(param))  # type: ignore[call-overload]
        if self.ordinal:
            return self._ascending[int(param)]  # type: ignore[call-overload]
        if self._ascending and is_number(param):
            return min(self._ascending, key=lambda v: abs(float(v) - float(param)))  # type: ignore[arg-type]
        return param

    @property
    def is_category(self) -> bool:
        """Compared by equality only: no order between its values (text, or numbers declared
        categorical)."""
        return not self.domain.is_numeric or self.domain.kind == "categorical"

    def coordinate(self, value: Value) -> float:
        """Where a numeric value lies, in [0, 1]: its rank, or its place in a continuous range."""
        if self.domain.is_range:
            return self.domain.index_of(value) / max(int(self.domain.size) - 1, 1)
        if self.domain.is_finite:
            return self._rank[value] / max(len(self._ascending) - 1, 1)
        low, high = float(self.domain.low), float(self.domain.high)
        return (float(value) - low) / (high - low)


@dataclass(frozen=True)
class SearchSpace:
    """The entity space as Optuna parameters, one dimension per constitutive property."""

    entity_space: EntitySpace
    dimensions: tuple[Dimension, ...]

    @classmethod
    def of(cls, entity_space: EntitySpace, numeric_only: bool = False) -> SearchSpace:
        """The search space of `entity_space`; `numeric_only` for samplers that need numbers.

        Raises `SearchSpaceError` naming the property that cannot be searched.
        """
        dimensions = tuple(
            _dimension(prop.name, prop.domain, numeric_only) for prop in entity_space.properties
        )
        return cls(entity_space, dimensions)

    @cached_property
    def distributions(self) -> dict[str, BaseDistribution]:
        return {d.name: d.distribution for d in self.dimensions}

    def params(self, entity: Mapping[str, Value]) -> dict[str, Value]:
        """Optuna parameters of an entity of the space."""
        return {d.name: d.param(entity[d.name]) for d in self.dimensions}

    def entity(self, params: Mapping[str, object]) -> Entity:
        """The entity of a sampler's suggestion (values snapped to their domains)."""
        return self.entity_space.normalise(
            {d.name: d.value(params[d.name]) for d in self.dimensions}
        )


def _dimension(name: str, domain: PropertyDomain, numeric_only: bool) -> Dimension:
    if domain.kind == "identifier":
        raise SearchSpaceError(
            f"property '{name}' is an identifier: it has no values an optimizer could suggest"
        )
    if domain.kind == "continuous":
        return Dimension(name, domain, _continuous(name, domain))
    if domain.is_range:
        return _range_dimension(name, domain)
    values = domain.values
    if not domain.is_numeric or domain.kind == "categorical":
        if numeric_only and len(values) > 1:
            raise SearchSpaceError(
                f"property '{name}' is categorical ({domain.describe()}), and this sampler "
                "searches numbers only"
            )
        return Dimension(name, domain, CategoricalDistribution(values))
    stepped = _as_range(values)
    if stepped is not None and stepped is not _BY_INDEX:
        return Dimension(name, domain, stepped)
    if numeric_only or stepped is _BY_INDEX:  # _BY_INDEX: evenly spaced, not a float grid
        return Dimension(name, domain, IntDistribution(0, len(values) - 1), ordinal=True)
    return Dimension(name, domain, CategoricalDistribution(values))


FLOAT_EXACT = 2**53
"""Whole numbers up to this are floats exactly: Optuna computes its distributions in floats."""


def _range_dimension(name: str, domain: PropertyDomain) -> Dimension:
    """A discrete range domain (low, high excluded, interval) as a stepped distribution; whole
    numbers beyond 2^53, which Optuna's float arithmetic cannot tell apart (it suggested values
    off the grid and the search failed with a bare ValueError), as their index in the range."""
    low, last, step = domain.value_at(0), domain.value_at(int(domain.size) - 1), domain.interval
    whole = isinstance(low, int) and isinstance(last, int) and isinstance(step, int)
    if not whole and _range_holds(domain):
        return Dimension(name, domain, FloatDistribution(float(low), float(last), step=float(step)))
    if not whole:  # Optuna would refuse its own grid's points: searched by index
        return Dimension(name, domain, IntDistribution(0, int(domain.size) - 1), ordinal=True)
    if max(abs(low), abs(last)) <= FLOAT_EXACT:
        return Dimension(name, domain, IntDistribution(low, last, step=step))
    # a range holds at most 2^53 values (`properties`): their indices are floats exactly
    return Dimension(name, domain, IntDistribution(0, int(domain.size) - 1), ordinal=True)


def _as_range(values: Sequence[Value]) -> BaseDistribution | None:
    """An int or float distribution with a step when the values are evenly spaced."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return None
    exact = [Decimal(repr(v)) if isinstance(v, float) else Decimal(v) for v in ordered]
    step = exact[1] - exact[0]
    if any(b - a != step for a, b in itertools.pairwise(exact)):
        return None
    widest = max(abs(float(ordered[0])), abs(float(ordered[-1])))
    if float(step) < 2 * math.ulp(widest):  # Optuna computes in floats: 10^17 + 1 is 10^17
        return None
    if all(isinstance(v, int) and is_number(v) for v in ordered):
        if max(abs(int(ordered[0])), abs(int(ordered[-1]))) > FLOAT_EXACT:
            return None  # Optuna computes in floats: searched as categories, or by rank
        return IntDistribution(int(ordered[0]), int(ordered[-1]), step=int(step))
    if not _float_grid_holds(ordered[0], ordered[-1], float(step), [float(v) for v in ordered]):
        return _BY_INDEX
    return FloatDistribution(float(ordered[0]), float(ordered[-1]), step=float(step))


_BY_INDEX = IntDistribution(0, 1)
"""`_as_range`'s answer for evenly spaced values Optuna's float grid cannot hold: by index."""

GRID_CHECKED = 200_000
"""Points of a float grid checked one by one against Optuna's distribution (all of a grid up
to this size; of a larger one, its first and last points and an even sample between)."""


def _float_grid_holds(low: float, high: float, step: float, points: Sequence[float]) -> bool:
    """Whether Optuna's `FloatDistribution(low, high, step)` contains each of the grid's
    `points` (its `_contains`: `(value - low) / step` within 1e-8 of a whole number; and its
    high, lowered where the decimals of the bounds do not divide by the step): [1e6, 1e6 + 1]
    by 0.001 and [0.1, 1.0) by 1/30 are not, and their searches failed when a measured point
    was told back. Asked of Optuna itself: a range once (`_range_holds`), listed values as
    `_as_range` reads them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Optuna's warning that it lowered high: checked below
        distribution = FloatDistribution(float(low), float(high), step=float(step))
    return all(distribution._contains(point) for point in points)


_RANGES: dict[tuple[object, ...], bool] = {}
"""`_range_holds` by the range's (low, interval, size): the same at every decision."""


def _range_holds(domain: PropertyDomain) -> bool:
    """`_float_grid_holds` of a float range's points (computed once per range)."""
    key = (repr(domain.low), repr(domain.interval), domain.size)
    if key not in _RANGES:
        size = int(domain.size)
        points = [float(domain.value_at(i)) for i in _sample(size)]
        last = domain.value_at(size - 1)
        if len(_RANGES) >= 256:
            _RANGES.clear()
        _RANGES[key] = _float_grid_holds(domain.low, last, domain.interval, points)
    return _RANGES[key]


def _sample(count: int) -> list[int]:
    """Indices of a grid of `count` points to check (all, up to `GRID_CHECKED`)."""
    if count <= GRID_CHECKED:
        return list(range(count))
    edge = GRID_CHECKED // 4
    stride = max(1, (count - 2 * edge) // (GRID_CHECKED // 2))
    return [*range(edge), *range(edge, count - edge, stride), *range(count - edge, count)]


def _continuous(name: str, domain: PropertyDomain) -> FloatDistribution:
    """A continuous domain's bounds as the floats inside it (a whole bound beyond 2^53 is no
    float: 2^53 + 1 was 2^53, below the domain, and its suggestion failed the search)."""
    low, high = float(domain.low), float(domain.high)
    if low < domain.low:
        low = math.nextafter(low, math.inf)
    if high > domain.high:
        high = math.nextafter(high, -math.inf)
    if low > high:
        raise SearchSpaceError(
            f"property '{name}' holds no float between its bounds {domain.describe()}: a "
            "search suggests floats"
        )
    return FloatDistribution(low, high)
