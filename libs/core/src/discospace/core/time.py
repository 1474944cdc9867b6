"""Time: durations and budgets in training units, after the composer time abstraction.

Units: ``ep`` (epochs), ``ba`` (batches), ``sp`` (samples), ``tok`` (tokens), ``iter``
(iterations), ``sec`` (seconds; ``1h20m40s`` is accepted) and ``dur`` (a fraction of a maximum
duration). Every unit but ``dur`` holds a whole number. Arithmetic and comparison need one unit;
conversion between units needs the facts that link them (see ``time_conversion.py``), and an
error names the missing fact.
"""

import math
import numbers
import re
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

from discospace.core.errors import TimeError

if TYPE_CHECKING:
    from discospace.core.time_conversion import TimeFacts


class TimeUnit(StrEnum):
    EPOCH = "ep"
    BATCH = "ba"
    SAMPLE = "sp"
    TOKEN = "tok"
    ITERATION = "iter"
    SECOND = "sec"
    DURATION = "dur"


_UNITS = "|".join(unit.value for unit in TimeUnit)
_DIGITS = r"\d(?:_?\d)*"
"""Digits, grouped by single underscores as Python (and composer's float()) reads them: 1_000."""
_NUMBER_AND_UNIT = re.compile(
    rf"^(?P<value>[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:e[+-]?{_DIGITS})?)"
    rf"\s*(?P<unit>{_UNITS})$",
    re.IGNORECASE | re.ASCII,
)
_TIMEDELTA = re.compile(
    r"^(?=\d)(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?$",
    re.IGNORECASE | re.ASCII,
)
_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_EXACT = Context(prec=200)
"""Decimal arithmetic wide enough to keep any realistic count exact (the default keeps 28)."""
SNAP = Decimal("1e-9")
"""A count this close to a whole number (relative) is that number: a share such as 1/3 is a
float a little below it (1/3 of 3ep came back as 0ep, not 1ep; 3ep * (1ep / 3ep) was refused as
0.9999999999999999ep)."""
FLOAT_NOISE = Decimal("1e-15")
"""A product this close to a whole number (relative) is that number: a few units in the last
place of a float factor (1/3 is 0.3333333333333333), where a real half (10^12 + 1 times 0.5) is
refused as `/ 2` refuses it."""
_ASCII_SPACE = " \t\n\r\f\v"
"""The white space a time may have around it, as `TIME_PATTERN` takes it."""


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


_SPACE = r"[ \t\n\r\f\v]"
"""ASCII white space, as the parser's backslash-s reads it (re.ASCII): ECMA-262's takes Unicode
spaces too, so the schema took "3", a no-break space and "ep", which the parser refused."""
TIME_PATTERN = (
    rf"^{_SPACE}*(?:[+-]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)"
    rf"(?:[eE][+-]?[0-9](?:_?[0-9])*)?{_SPACE}*(?:"
    + "|".join(_any_case(unit.value) for unit in TimeUnit)
    + rf")|(?=[0-9])(?:[0-9]+[dD])?(?:[0-9]+[hH])?(?:[0-9]+[mM])?(?:[0-9]+[sS])?){_SPACE}*$"
)
"""The JSON Schema pattern of a time string (ECMA-262: no inline flags, so cases are spelled)."""


def as_unit(unit: "TimeUnit | str") -> TimeUnit:
    """A unit named in any case ("EP", " ba"); a `TimeError` naming the units for anything else."""
    try:
        return TimeUnit(str(unit).strip().lower())
    except ValueError:
        names = ", ".join(u.value for u in TimeUnit)
        raise TimeError(f"'{unit}' is not a time unit: use one of {names}") from None


MAX_TIME_VALUE = 2**63 - 1
"""The largest amount of any unit (a signed 64-bit count: 10^18 tokens is far beyond any run);
sums and products stay exact below it."""


def _whole_or_fraction(value: object, unit: TimeUnit, shown: str) -> int | float:
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TimeError(f"a time value is a number, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise TimeError(f"{shown} is not a finite time")
    if isinstance(value, Decimal) and not value.is_finite():
        raise TimeError(f"{shown} is not a finite time")
    if not -MAX_TIME_VALUE <= value <= MAX_TIME_VALUE:
        raise TimeError(f"{_abridged(shown)} is too large: a time holds at most 2^63 - 1 {unit}")
    if unit is TimeUnit.DURATION:
        share = float(value)
        if share == 0 and value != 0:  # beyond a float's smallest: it read as 0.0dur
            raise TimeError(f"{_abridged(shown)} is too small: a dur holds at least about 5e-324")
        return share
    if value != int(value):
        raise TimeError(f"{shown} is not a whole number of {unit.value}: only dur takes fractions")
    return int(value)


def plain_number(value: object) -> object:
    """A number of another library (numpy's int64 and float64, as pandas hands them over) as
    Python's int or float; anything else as it is."""
    if isinstance(value, bool | int | float | Decimal):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def _abridged(text: str, keep: int = 24) -> str:
    """`text`, its middle left out when it is longer than `keep` characters."""
    return text if len(text) <= keep else f"{text[: keep // 2]}...{text[-keep // 2 :]}"


@dataclass(frozen=True)
class Time:
    """A frozen time value: ``Time(3, "ep")``, ``Time.parse("1h20m40s")`` -> ``4840sec``."""

    value: int | float
    unit: TimeUnit

    def __init__(self, value: int | float, unit: TimeUnit | str) -> None:
        checked_unit = as_unit(unit)
        shown = f"{value}{checked_unit.value}"
        object.__setattr__(self, "unit", checked_unit)
        object.__setattr__(self, "value", _whole_or_fraction(value, checked_unit, shown))

    # -- text --------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> "Time":
        """``"3ep"``, ``"3e4TOK"``, ``"0.1dur"``, ``"1h20m40s"`` (case-insensitive)."""
        if not isinstance(text, str):
            raise TimeError(f"a time is written as text like '3ep', not {text!r}")
        clean = text.strip(_ASCII_SPACE)
        match = _NUMBER_AND_UNIT.match(clean)
        if match:
            unit = as_unit(match["unit"])
            return cls(_whole_or_fraction(_decimal(match["value"]), unit, clean), unit)
        delta = _TIMEDELTA.match(clean)
        if delta and any(delta.groupdict().values()):
            parts = {k: n.lstrip("0") or "0" for k, n in delta.groupdict().items() if n}
            if any(len(n) > len(str(MAX_TIME_VALUE)) for n in parts.values()):
                raise TimeError(
                    f"{_abridged(clean)} is too large: a time holds at most 2^63 - 1 "
                    f"{TimeUnit.SECOND}"
                )
            seconds = sum(int(n) * _SECONDS[k] for k, n in parts.items())
            return cls(seconds, TimeUnit.SECOND)
        raise TimeError(
            f"'{text}' is not a time: write a number and a unit "
            f"({', '.join(u.value for u in TimeUnit)}) or a duration like 1h20m40s"
        )

    def __str__(self) -> str:
        return f"{self.value}{self.unit.value}"

    def __repr__(self) -> str:
        return f"Time({self})"

    # -- arithmetic and comparison -----------------------------------------------------------

    def _same_unit(self, other: object, verb: str) -> "Time":
        other_time = _coerce(other)
        if other_time.unit is not self.unit:
            raise TimeError(
                f"cannot {verb} {self} and {other_time}: they have different units "
                "(convert one first)"
            )
        return other_time

    def __add__(self, other: object) -> "Time":
        addend = _decimal(repr(self._same_unit(other, "add").value))
        return Time(_number(_EXACT.add(_decimal(repr(self.value)), addend)), self.unit)

    def __sub__(self, other: object) -> "Time":
        subtrahend = _decimal(repr(self._same_unit(other, "subtract").value))
        return Time(_number(_EXACT.subtract(_decimal(repr(self.value)), subtrahend)), self.unit)

    def __rsub__(self, other: object) -> "Time":
        """`"5ep" - Time(2, "ep")`, as `+` takes a time's text on either side."""
        return _coerce(other) - self

    def __radd__(self, other: object) -> "Time":
        """`sum(times)` starts from 0: a zero adds nothing; anything else adds as `+` does."""
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return self + other

    def __neg__(self) -> "Time":
        return Time(-self.value, self.unit)

    def __mul__(self, factor: object) -> "Time":
        """Times a number, or a fraction of a duration (`2ep * 0.5dur` is `1ep`, as composer
        has it)."""
        if isinstance(factor, Time | str):
            fraction = _coerce(factor)
            if fraction.unit is not TimeUnit.DURATION and self.unit is TimeUnit.DURATION:
                return fraction * self  # `0.5dur * 2ep` is `2ep * 0.5dur`, as composer has it
            if fraction.unit is not TimeUnit.DURATION:
                raise TimeError(f"cannot multiply {self} by {fraction}: only by a number or a dur")
            factor = fraction.value
        number = _factor(factor, "multiply")
        product = _EXACT.multiply(_decimal(repr(self.value)), _decimal(repr(number)))
        if self.unit is not TimeUnit.DURATION:
            product = snapped(product, FLOAT_NOISE)  # 3ep * (1 / 3): float noise, not a half
        shown = f"{self} * {number} = {product.normalize():f}{self.unit.value}"
        return Time(_whole_or_fraction(product, self.unit, shown), self.unit)

    __rmul__ = __mul__

    def __rtruediv__(self, other: object) -> "Time":
        """`"3ep" / Time(2, "ep")`, as `-` takes a time's text on either side."""
        if not isinstance(other, str):
            return NotImplemented
        return _coerce(other) / self

    def __truediv__(self, other: object) -> "Time":
        """``Time / Time`` of one unit is a ``dur``; ``Time / number`` keeps the unit."""
        if isinstance(other, Time | str):
            divisor = self._same_unit(other, "divide").value
            if divisor == 0:
                raise TimeError(f"cannot divide {self} by a zero time")
            share = _EXACT.divide(_decimal(repr(self.value)), _decimal(repr(divisor)))
            shown = f"{self} / {_coerce(other)} = {share.normalize():f}dur"
            return Time(_whole_or_fraction(share, TimeUnit.DURATION, shown), TimeUnit.DURATION)
        number = _factor(other, "divide")
        if number == 0:
            raise TimeError(f"cannot divide {self} by zero")
        quotient = _EXACT.divide(_decimal(repr(self.value)), _decimal(repr(number)))
        shown = f"{self} / {number} = {quotient.normalize():f}{self.unit.value}"
        return Time(_whole_or_fraction(quotient, self.unit, shown), self.unit)

    def __eq__(self, other: object) -> bool:
        """Equal to a time of the same unit and value, or to its text ("5ep"), as the
        orderings read it; a time of another unit is not equal (the orderings refuse it)."""
        if isinstance(other, str):
            try:
                other = Time.parse(other)
            except TimeError:
                return False
        if not isinstance(other, Time):
            return NotImplemented
        return self.unit is other.unit and self.value == other.value

    def __lt__(self, other: object) -> bool:
        return self.value < self._same_unit(other, "compare").value

    def __le__(self, other: object) -> bool:
        return self.value <= self._same_unit(other, "compare").value

    def __gt__(self, other: object) -> bool:
        return self.value > self._same_unit(other, "compare").value

    def __ge__(self, other: object) -> bool:
        return self.value >= self._same_unit(other, "compare").value

    # -- conversion --------------------------------------------------------------------------

    def to(self, unit: TimeUnit | str, facts: "TimeFacts | None" = None, **known: Any) -> "Time":
        """This time in ``unit``; ``facts`` or keywords give samples_per_epoch, batch_size,
        tokens_per_epoch, tokens_per_sample, max_duration. Reductions round down."""
        from discospace.core.time_conversion import convert, merge_facts

        return convert(self, as_unit(unit), merge_facts(facts, known))

    def fraction_of(
        self, max_duration: "Time | str", facts: "TimeFacts | None" = None, **known: Any
    ) -> float:
        """How much of ``max_duration`` this elapsed time is (1.0 when it is all used)."""
        from discospace.core.time_conversion import elapsed_fraction, merge_facts

        return elapsed_fraction(self, _coerce(max_duration), merge_facts(facts, known))

    # -- pydantic ----------------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _validate, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {
            "type": "string",
            "pattern": TIME_PATTERN,
            "examples": ["30sec", "1h20m40s", "3ep", "0.1dur"],
        }


def _decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        pass
    written = _EXPONENT.fullmatch(text)
    if written is None:
        raise TimeError(f"'{text}' is not a number") from None
    # an exponent beyond Decimal's (+-999999999): as far out as Decimal goes, which is still
    # too large, too small or a fraction, as the time checks then say
    exponent = max(-_MAX_EXPONENT, min(_MAX_EXPONENT, int(written["exponent"])))
    return Decimal(f"{written['mantissa']}e{exponent}")


_EXPONENT = re.compile(
    r"(?P<mantissa>[+-]?(?:[\d_]+\.?[\d_]*|\.[\d_]+))[eE](?P<exponent>[+-]?[\d_]+)"
)
_MAX_EXPONENT = 999_999_999


def snapped(count: Decimal, within: Decimal = SNAP) -> Decimal:
    """`count`, or the whole number `within` of it (relative)."""
    whole = count.to_integral_value()
    return whole if abs(count - whole) <= within * max(Decimal(1), abs(count)) else count


def _number(exact: Decimal) -> int | float:
    """Sums are exact in decimal (0.1dur + 0.2dur is 0.3dur), then plain numbers again."""
    return int(exact) if exact == exact.to_integral_value() else float(exact)


def _factor(value: object, verb: str) -> int | float:
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TimeError(f"can only {verb} a time by a number, not {value!r}")
    if not math.isfinite(value):
        raise TimeError(f"can only {verb} a time by a finite number, not {value}")
    return value


def _coerce(value: object) -> Time:
    if isinstance(value, Time):
        return value
    if isinstance(value, str):
        return Time.parse(value)
    raise TimeError(f"{value!r} is not a time")


def _validate(value: object) -> Time:
    """Pydantic: a Time, a string like "30sec", or a mapping {value, unit}."""
    if isinstance(value, dict) and set(value) == {"value", "unit"}:
        return Time(value["value"], value["unit"])
    return _coerce(value)
