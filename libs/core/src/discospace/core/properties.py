"""Constitutive properties: building a validated domain from its file model, and back.

Every rule an ill-formed domain can break is checked here, and each rejection is one sentence
that starts with the property's name.
"""

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from discospace.core.canonical import (
    Value,
    beyond_64_bits,
    format_value,
    normalise_value,
    not_finite,
    value_kind,
)
from discospace.core.errors import DomainError
from discospace.core.property_domains import UNIFORM, DomainKind, Probability, PropertyDomain
from discospace.core.spec import ProbabilitySpec, PropertySpec


@dataclass(frozen=True)
class ConstitutiveProperty:
    """A named property of an entity space with its domain."""

    name: str
    domain: PropertyDomain

    @classmethod
    def from_spec(cls, spec: PropertySpec) -> "ConstitutiveProperty":
        return cls(spec.name, domain_from_spec(spec))

    def to_spec(self) -> PropertySpec:
        return domain_to_spec(self.name, self.domain)


def _fail(name: str, problem: str) -> DomainError:
    return DomainError(f"property '{name}' {problem}")


RESERVED_NAMES = frozenset({"entity_id", "status", "reason"})
"""Columns every view of a space has beside its properties' (`projector.spaces`)."""


def check_property_name(name: str) -> None:
    """Property names cannot hold '.' (reserved for observed property ids) or spaces, and
    cannot be a column every view has (`RESERVED_NAMES`)."""
    if not name or any(c.isspace() for c in name) or "." in name:
        raise DomainError(f"property name '{name}' must be non-empty, without spaces or '.'")
    if name in RESERVED_NAMES:
        raise DomainError(
            f"property name '{name}' is a column every view of a space has "
            f"({', '.join(sorted(RESERVED_NAMES))}): name it otherwise"
        )


def domain_from_spec(spec: PropertySpec) -> PropertyDomain:
    """The validated domain described by ``spec``; the type is inferred when omitted."""
    check_property_name(spec.name)
    if spec.values is not None and spec.range is not None:
        raise _fail(spec.name, "gives both values and a range: give one of them")
    if spec.values is not None:
        domain = _domain_from_values(spec)
    elif spec.range is not None:
        domain = _domain_from_range(spec)
    elif spec.type == "identifier":
        if spec.interval is not None:
            raise _fail(spec.name, "is an identifier and takes no interval")
        domain = PropertyDomain.identifier()
    else:
        raise _fail(spec.name, "has no values and no range")
    probability = _probability(spec.name, spec.probability, domain)
    return PropertyDomain(
        domain.kind, domain.explicit_values, domain.low, domain.high, domain.interval, probability
    )


def _domain_from_values(spec: PropertySpec) -> PropertyDomain:
    values = tuple(normalise_value(v) for v in spec.values or ())
    if not values:
        raise _fail(spec.name, "has no values")
    if spec.interval is not None:
        raise _fail(spec.name, "gives an interval without a range")
    kinds = sorted({value_kind(v) for v in values})
    if len(kinds) > 1:
        raise _fail(spec.name, f"mixes value types ({' and '.join(kinds)})")
    _check_values(spec.name, values)
    kind = spec.type or ("discrete" if kinds == ["numbers"] else "categorical")
    if kind == "discrete" and kinds != ["numbers"]:
        raise _fail(spec.name, "is discrete but its values are not numbers")
    if kind in ("continuous", "identifier"):
        raise _fail(spec.name, f"is {kind} and takes no list of values")
    return PropertyDomain(kind, explicit_values=values)


def _check_values(name: str, values: tuple[Value, ...]) -> None:
    seen: set[Value] = set()
    for value in values:
        if not_finite(value):
            raise _fail(name, f"has the value {value}, which is not a finite number")
        _check_whole(name, value)
        if value in seen:
            raise _fail(name, f"lists the value {format_value(value)} twice")
        seen.add(value)


MIN_NORMAL_MASS = 1e-9
"""The least share of a normal probability that must lie inside its property's range: with
less, a draw (the law's inverse, cut to the range) lands on a bound every time."""

MAX_DOMAIN_SIZE = 2**53
"""The most values a discrete range may have: every index of it is exact as a float."""


def _domain_from_range(spec: PropertySpec) -> PropertyDomain:
    low, high = (normalise_value(bound) for bound in spec.range or ())
    if not all(math.isfinite(bound) for bound in (low, high)):
        raise _fail(spec.name, "has a range bound that is not a finite number")
    if low >= high:
        raise _fail(spec.name, f"has a range whose low ({low}) is not below its high ({high})")
    for bound in (low, high):  # a real bound beyond 2^53 is whole: so every width is finite
        _check_whole(spec.name, bound)
    kind = spec.type or _range_kind(spec)
    if kind in ("categorical", "identifier"):
        raise _fail(spec.name, f"is {kind} and takes no range")
    if kind == "continuous":
        if spec.interval is not None:
            raise _fail(spec.name, "is continuous and takes no interval")
        return PropertyDomain.continuous(low, high)
    interval = normalise_value(spec.interval if spec.interval is not None else 1)
    if not math.isfinite(interval) or interval <= 0:
        raise _fail(spec.name, f"has an interval of {interval}; it must be above 0")
    domain = PropertyDomain.discrete_range(low, high, interval)
    if domain.size > MAX_DOMAIN_SIZE:
        raise _fail(
            spec.name,
            f"has a range of {magnitude(int(domain.size))} values at interval {interval}, "
            f"over the limit of 2^53 ({MAX_DOMAIN_SIZE}): widen the interval, or make it "
            "continuous",
        )
    _check_apart(spec.name, low, high, interval)
    return domain


def _check_apart(name: str, low: int | float, high: int | float, interval: int | float) -> None:
    """Neighbouring values of a discrete range are distinct numbers: an interval finer than a
    float can tell apart near a bound (0.5 near 2^53) listed one value several times, so the
    space counted entities it does not have and a walk measured one entity again. Two exact
    values at least two float spacings apart stay apart once rounded; whole numbers are exact."""
    if all(isinstance(number, int) for number in (low, high, interval)):
        return
    near = max(abs(low), abs(high))
    if interval < 2 * math.ulp(near):
        raise _fail(
            name,
            f"has an interval of {format_value(interval)}, finer than a float can tell apart "
            f"near {format_value(near)}: its values would repeat; widen the interval",
        )


def _check_whole(name: str, value: Value) -> None:
    """A whole number beyond 64 bits (`1e20` in a file is one: values are normalised) is
    refused: no event or store column holds it."""
    if beyond_64_bits(value):
        assert isinstance(value, int)
        sign = "" if value > 0 else "minus "
        raise _fail(
            name,
            f"has the whole number {sign}{magnitude(abs(value))} (a real number that is whole, "
            "such as 1e20, is one too), beyond 64 bits (-2^63 .. 2^63 - 1), which no event or "
            "store column holds",
        )


def magnitude(count: int) -> str:
    """A count for a sentence: as written below 10^18, else its power of ten (from its bit
    length: `str` of a very long int is refused)."""
    if count < 10**18:
        return str(count)
    return f"about 10^{int(count.bit_length() * math.log10(2))}"


def _range_kind(spec: PropertySpec) -> DomainKind:
    """The type of an untyped range: discrete with an interval, continuous when a bound is
    written as a real number (``[0.0, 1.0]``, ``[1e-5, 1e-3]``).

    Two whole-number bounds and no interval are ambiguous (``batch_size: [8, 512]`` reads as a
    discrete range but would draw 283.41 as a continuous one), so they are refused.
    """
    if spec.interval is not None:
        return "discrete"
    if any(isinstance(bound, float) for bound in spec.range or ()):
        return "continuous"
    low, high = spec.range or (0, 0)
    raise _fail(
        spec.name,
        f"has a range of whole numbers [{low}, {high}] but no interval: add `interval: 1` "
        "(or another step) for a discrete range, or `type: continuous` for any number in between",
    )


def _probability(name: str, spec: ProbabilitySpec | None, domain: PropertyDomain) -> Probability:
    if spec is None or (spec.name == "uniform" and spec.mean is None and spec.std is None):
        return UNIFORM
    if spec.name == "uniform":
        raise _fail(name, "has a uniform probability, which takes no mean or std")
    if spec.mean is None or spec.std is None:
        raise _fail(name, "has a normal probability without both mean and std")
    if not math.isfinite(spec.mean):
        raise _fail(
            name, f"has a normal probability with mean {spec.mean}; it must be a finite number"
        )
    if not math.isfinite(spec.std) or spec.std <= 0:
        raise _fail(name, f"has a normal probability with std {spec.std}; it must be above 0")
    if not domain.is_numeric:
        raise _fail(name, "has a normal probability but its values are not numbers")
    if domain.is_finite:  # a random walk draws finite properties by permutation, each once
        raise _fail(
            name,
            "has a normal probability, which shapes only the draws of a continuous property: a "
            "random walk visits each value of a discrete one once, in a uniformly random order "
            "(make it `type: continuous`, or leave the probability out)",
        )
    if domain.low is not None and domain.high is not None:
        law = NormalDist(spec.mean, spec.std)
        mass = law.cdf(float(domain.high)) - law.cdf(float(domain.low))
        if mass < MIN_NORMAL_MASS:
            raise _fail(
                name,
                f"has a normal probability (mean {spec.mean}, std {spec.std}) with almost none "
                f"of its mass inside its range [{domain.low}, {domain.high}] ({mass:.2g}): every "
                "draw would be the same bound; move the mean inside, or widen the std",
            )
    return Probability("normal", float(spec.mean), float(spec.std))


def domain_to_spec(name: str, domain: PropertyDomain) -> PropertySpec:
    """The file model of a domain (the explicit type is always written)."""
    probability = None
    if domain.probability != UNIFORM:
        law = domain.probability
        probability = ProbabilitySpec(name=law.name, mean=law.mean, std=law.std)
    bounds = None if domain.low is None else (domain.low, domain.high)
    return PropertySpec(
        name=name,
        type=domain.kind,
        values=domain.explicit_values,
        range=bounds,
        interval=domain.interval,
        probability=probability,
    )


def canonical_property(prop: ConstitutiveProperty) -> dict[str, Any]:
    """The canonical form of a property for content hashes: explicit values are sorted."""
    domain = prop.domain
    form: dict[str, Any] = {"name": prop.name, "type": domain.kind}
    if domain.explicit_values is not None:
        form["values"] = sorted(domain.explicit_values)  # one kind per domain: comparable
    if domain.low is not None:
        form["range"] = [domain.low, domain.high]
    if domain.interval is not None:
        form["interval"] = domain.interval
    if domain.probability != UNIFORM:
        law = domain.probability
        form["probability"] = {"name": law.name, "mean": law.mean, "std": law.std}
    return form
