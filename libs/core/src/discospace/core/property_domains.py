"""Property domains: the set of values one constitutive property can take.

A domain is categorical (explicit values), discrete (explicit numeric values, or a range with an
interval, the upper bound excluded), continuous (a range, both bounds included) or identifier (an
open set that cannot be counted). Finite domains map values to indices and back in O(1), so an
entity space can address any of its points by a mixed-radix index without listing them.
"""

import bisect
import math
import statistics
from dataclasses import dataclass
from decimal import Context, Decimal
from functools import cached_property
from typing import Literal

from discospace.core.canonical import (
    NUMBER_TEXT,
    Value,
    beyond_64_bits,
    format_value,
    is_number,
    normalise_number,
)
from discospace.core.errors import DomainError

DomainKind = Literal["categorical", "discrete", "continuous", "identifier"]
ProbabilityName = Literal["uniform", "normal"]


@dataclass(frozen=True)
class Probability:
    """How values are drawn: uniform, or normal with a mean and a standard deviation."""

    name: ProbabilityName = "uniform"
    mean: float | None = None
    std: float | None = None


UNIFORM = Probability()


_SPAN = Context(prec=1000)
"""Wide enough for the exact difference of any two floats (1e308 and 5e-324: about 630 digits)."""


def _decimal(number: int | float) -> Decimal:
    """The exact decimal a user wrote for a number (``0.1`` -> ``Decimal('0.1')``)."""
    return Decimal(number) if isinstance(number, int) else Decimal(repr(number))


def _from_decimal(number: Decimal) -> int | float:
    """The number a grid point is: exact when whole, else the nearest float, canonical (a
    point 0.99999999999999996 is the float 1.0, which is the whole number 1)."""
    return int(number) if number == number.to_integral_value() else normalise_number(float(number))


def _to_number(value: object) -> int | float | None:
    """A number from a number or a numeric string ("4" -> 4); None when it is not one."""
    if is_number(value):
        number = normalise_number(value)
    elif isinstance(value, str):
        text = value.strip()
        if not NUMBER_TEXT.fullmatch(text):  # int() and float() also read other digits, "1_000"
            return None
        try:  # a whole number exactly: through a float, 2^53 + 1 was 2^53, another value
            number = int(text)
        except ValueError:
            number = _written_number(text)
    else:
        return None
    return number if isinstance(number, int) or math.isfinite(number) else None


def _written_number(text: str) -> int | float:
    """A number written with a point or an exponent: exactly the whole number it is, as
    `int()` reads one without ("9007199254740993.0" and "9.007199254740993e15" are 2^53 + 1,
    which the float read them as 2^53, another entity); else the nearest float."""
    exact = Decimal(text)  # NUMBER_TEXT matched: Decimal reads it, inf and nan too
    small = exact.is_finite() and exact.adjusted() < _EXACT_DIGITS
    if small and exact == exact.to_integral_value():
        return int(exact)
    return normalise_number(float(text))  # beyond 64 bits or infinite: refused where read


def _fraction_lost(value: object) -> bool:
    """Whether `value` is text of a fraction whose nearest float is a whole number
    ("9007199254740993.5" is the float 9007199254740994.0): no point of a domain of whole
    numbers, which the float would have matched."""
    if not isinstance(value, str) or not NUMBER_TEXT.fullmatch(text := value.strip()):
        return False
    exact = Decimal(text)
    return exact.is_finite() and exact != exact.to_integral_value() and float(text).is_integer()


_EXACT_DIGITS = 19
"""Digits before the point up to which a written number is read exactly (2^63 has 19)."""


GRID_NOISE_ULPS = 64
"""How far a float may lie from a point of a float grid and still be that point, in units in the
last place of the largest number of the point's arithmetic (the grid's low bound and interval, the
point, the number): the noise of float arithmetic (`0.1 * 3` is 0.30000000000000004; Optuna's
`k * step + low` near 0 on [-100, 100) is off by an ulp of 100), not a fraction of the interval,
which took a whole number 1 off a grid of interval 10^9 for its neighbour."""


def _coerce_to_kind(value: object, sample: Value) -> Value | None:
    """``value`` converted to the kind of ``sample`` (number, string or boolean), or None."""
    if isinstance(sample, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        return {"true": True, "false": False}.get(text)
    if isinstance(sample, str):
        if isinstance(value, str):
            return value
        return format_value(normalise_number(value)) if is_number(value) else None
    return None if isinstance(value, bool) else _to_number(value)


@dataclass(frozen=True, eq=False)
class PropertyDomain:
    """A property domain. Build it with :func:`discospace.core.domain_from_spec` or the helpers
    :meth:`categorical`, :meth:`discrete`, :meth:`discrete_range`, :meth:`continuous`,
    :meth:`identifier`; the constructor does not validate."""

    kind: DomainKind
    explicit_values: tuple[Value, ...] | None = None
    low: int | float | None = None
    high: int | float | None = None
    interval: int | float | None = None
    probability: Probability = UNIFORM

    @classmethod
    def categorical(cls, values: tuple[Value, ...]) -> "PropertyDomain":
        return cls("categorical", explicit_values=values)

    @classmethod
    def discrete(cls, values: tuple[int | float, ...]) -> "PropertyDomain":
        return cls("discrete", explicit_values=values)

    @classmethod
    def discrete_range(
        cls, low: int | float, high: int | float, interval: int | float = 1
    ) -> "PropertyDomain":
        return cls("discrete", low=low, high=high, interval=interval)

    @classmethod
    def continuous(cls, low: int | float, high: int | float) -> "PropertyDomain":
        return cls("continuous", low=low, high=high)

    @classmethod
    def identifier(cls) -> "PropertyDomain":
        return cls("identifier")

    # -- shape -------------------------------------------------------------------------------

    @property
    def is_finite(self) -> bool:
        return self.kind in ("categorical", "discrete")

    @property
    def is_range(self) -> bool:
        """True for a discrete domain given by range and interval."""
        return self.kind == "discrete" and self.explicit_values is None

    @property
    def is_numeric(self) -> bool:
        if self.kind in ("discrete", "continuous"):
            return True
        return bool(self.explicit_values) and all(map(is_number, self.explicit_values or ()))

    @cached_property
    def size(self) -> int | float:
        """Number of values; ``math.inf`` for continuous and identifier domains."""
        if self.explicit_values is not None:
            return len(self.explicit_values)
        if self.kind != "discrete":
            return math.inf
        # exactly enough that the ceiling sees a span of N + 1e-30 (default 28 digits: N)
        width = _SPAN.subtract(_decimal(self.high), _decimal(self.low))  # type: ignore[arg-type]
        span = _SPAN.divide(width, _decimal(self.interval))  # type: ignore[arg-type]
        size = int(span.to_integral_value(rounding="ROUND_CEILING"))
        if size > 0 and self._point(size - 1) >= self.high:  # type: ignore[operator]
            return size - 1  # exactly below the end, but as a number it is the end: excluded
        return size

    @property
    def values(self) -> tuple[Value, ...]:
        """Every value, in index order; only for finite domains."""
        if not self.is_finite:
            raise DomainError(f"a {self.kind} domain has no list of values")
        if self.explicit_values is not None:
            return self.explicit_values
        return tuple(self.value_at(i) for i in range(int(self.size)))

    # -- values and indices ------------------------------------------------------------------

    def value_at(self, index: int) -> Value:
        """The value at ``index`` of a finite domain (O(1))."""
        if self.explicit_values is not None:
            return self.explicit_values[index]
        if not 0 <= index < self.size:
            raise IndexError(index)
        return self._point(index)

    def _point(self, index: int) -> int | float:
        if isinstance(self.low, int) and isinstance(self.interval, int):
            return self.low + index * self.interval
        step = _decimal(self.low) + index * _decimal(self.interval)  # type: ignore[arg-type]
        return _from_decimal(step)

    def index_of(self, value: object) -> int:
        """The index of a member value (after normalisation); ``KeyError`` when not a member."""
        member = self.normalise(value)
        if member is None or not self.is_finite:
            raise KeyError(value)
        if self.explicit_values is not None:
            return self._index[member]
        offset = (_decimal(member) - _decimal(self.low)) / _decimal(self.interval)  # type: ignore[arg-type]
        return int(offset.to_integral_value())  # a point's float may lie either side of it

    @cached_property
    def _index(self) -> dict[Value, int]:
        """Value -> index; values of one domain share one kind, so ``True == 1`` cannot clash."""
        return {v: i for i, v in enumerate(self.explicit_values or ())}

    def normalise(self, value: object) -> Value | None:
        """The canonical member equal to ``value`` ("4", 4.0 -> 4 in a numeric domain), or None."""
        if self.kind == "identifier":
            return self._normalise_identifier(value)
        if self.explicit_values is not None:
            return self._normalise_explicit(value)
        number = None if isinstance(value, bool) else _to_number(value)
        if number is None or (self._whole_grid and _fraction_lost(value)):
            return None
        if self.kind == "continuous":
            return number if self.low <= number <= self.high else None  # type: ignore[operator]
        # the grid's bounds apply to its points: a float within the noise below the lowest
        # (0.7 - 0.4 on [0.3, 1.0] step 0.1) is that point, as it is of any other point
        return self._normalise_on_grid(number)

    def _normalise_identifier(self, value: object) -> Value | None:
        if isinstance(value, bool | str):
            return value
        number = _to_number(value)
        return None if beyond_64_bits(number) else number  # no event or column holds it

    def _normalise_explicit(self, value: object) -> Value | None:
        candidate = _coerce_to_kind(value, self.explicit_values[0])  # type: ignore[index]
        if candidate is None or (type(candidate) is int and _fraction_lost(value)):
            return None
        return candidate if candidate in self._index else None

    @cached_property
    def _whole_grid(self) -> bool:
        """A range of whole numbers by a whole interval: a fraction is none of its points."""
        return self.is_range and type(self.low) is int and type(self.interval) is int

    def _normalise_on_grid(self, number: int | float) -> Value | None:
        offset = (_decimal(number) - _decimal(self.low)) / _decimal(self.interval)  # type: ignore[arg-type]
        index = offset.to_integral_value()
        if not 0 <= index < self.size:
            return None
        point = self.value_at(int(index))
        return point if self._same_point(number, point) else None

    def _same_point(self, number: int | float, point: int | float) -> bool:
        """Whether `number` is the grid point `point`: exactly on a grid of whole numbers (a
        fraction is never one of its points), else up to float noise (`GRID_NOISE_ULPS`),
        never a quarter of the interval or more."""
        if number == point:
            return True
        low, interval = self.low, self.interval
        if isinstance(low, int) and isinstance(interval, int):
            return False
        largest = max(abs(low), abs(interval), abs(number), abs(point))  # type: ignore[arg-type]
        noise = min(GRID_NOISE_ULPS * math.ulp(largest), abs(interval) / 4)  # type: ignore[arg-type]
        return abs(number - point) <= noise

    def __contains__(self, value: object) -> bool:
        return self.normalise(value) is not None

    def is_subdomain_of(self, other: "PropertyDomain") -> bool:
        """True when every value of this domain is a value of ``other``."""
        if other.kind == "identifier":
            return True
        if self.kind == "identifier":
            return False
        if self.kind == "continuous":
            return other.kind == "continuous" and other.low <= self.low and self.high <= other.high  # type: ignore[operator]
        if other.kind == "continuous" or (self.is_range and other.is_range):
            return self._bounds_and_step_within(other)
        if self.size > other.size:
            return False
        return all(value in other for value in self.values)

    def _bounds_and_step_within(self, other: "PropertyDomain") -> bool:
        """Sub-domain test without listing values: ends inside, and on the grid of ``other``."""
        if not self.is_numeric:
            return False
        if self.explicit_values is not None:
            return all(value in other for value in self.explicit_values)
        first, last = self.value_at(0), self.value_at(int(self.size) - 1)
        if first not in other or last not in other:
            return False
        if other.kind == "continuous" or self.size == 1:
            return True
        step = _decimal(self.interval) / _decimal(other.interval)  # type: ignore[arg-type]
        return step == step.to_integral_value()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PropertyDomain):
            return NotImplemented
        same_law = self.probability == other.probability
        return same_law and self.is_subdomain_of(other) and other.is_subdomain_of(self)

    def __hash__(self) -> int:
        return hash((self.size, self.probability))

    def describe(self) -> str:
        """The values or the range, as a user wrote them (``[1, 2, 4]``, ``[0, 10) step 2``)."""
        if self.explicit_values is not None:
            return "[" + ", ".join(format_value(v) for v in self.explicit_values) + "]"
        if self.kind == "discrete":
            return f"[{self.low}, {self.high}) step {self.interval}"
        if self.kind == "continuous":
            return f"[{self.low}, {self.high}]"
        return "any value"

    # -- drawing -----------------------------------------------------------------------------

    def draw(self, unit: float) -> Value:
        """The value at quantile ``unit`` in [0, 1) of the domain's probability.

        Continuous domains use the (truncated) normal or uniform law on their range; finite
        domains weight their values by the law. Identifier domains cannot be drawn from.
        """
        if self.kind == "identifier":
            raise DomainError("an identifier domain cannot be sampled")
        if self.kind == "continuous":
            return normalise_number(self._continuous_quantile(unit))
        return self.value_at(self._finite_quantile_index(unit))

    def _continuous_quantile(self, unit: float) -> float:
        low, high = float(self.low), float(self.high)  # type: ignore[arg-type]
        if self.probability.name == "uniform":
            return low + unit * (high - low)
        law = statistics.NormalDist(self.probability.mean or 0.0, self.probability.std or 1.0)
        lower, upper = law.cdf(low), law.cdf(high)
        quantile = lower + unit * (upper - lower)
        return min(max(law.inv_cdf(min(max(quantile, 1e-300), 1 - 1e-16)), low), high)

    def _finite_quantile_index(self, unit: float) -> int:
        if self.probability.name == "uniform":
            return min(int(unit * self.size), int(self.size) - 1)
        total = self._cumulative_weights[-1]
        position = bisect.bisect_right(self._cumulative_weights, unit * total)
        return min(position, int(self.size) - 1)

    @cached_property
    def _cumulative_weights(self) -> list[float]:
        law = statistics.NormalDist(self.probability.mean or 0.0, self.probability.std or 1.0)
        weights = [law.pdf(float(v)) for v in self.values]
        cumulative, running = [], 0.0
        for weight in weights:
            running += weight
            cumulative.append(running)
        return cumulative if running > 0 else [float(i + 1) for i in range(len(weights))]
