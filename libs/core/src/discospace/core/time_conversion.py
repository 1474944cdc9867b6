"""Conversions between time units, each link needing explicit facts.

Links: ``ep``<->``ba`` (samples_per_epoch, batch_size; an epoch has ceil(samples / batch size)
batches), ``ep``<->``sp`` (samples_per_epoch), ``ba``<->``sp`` (batch_size), ``ep``<->``tok``
(tokens_per_epoch), ``sp``<->``tok`` (tokens_per_sample); chains follow the shortest path whose
facts are known. ``dur`` converts through max_duration, counted in the finer of the maximum's
unit and the target (0.1dur of 90ep is 9ep; 0.5dur of 3ep is 15ba at 10 batches per epoch).
Going to a coarser unit rounds down (150ba is 1ep when an epoch has 100 batches; a dur's share
within 1e-9 of a whole number is that number, so 1/3 of 3ep is 1ep); ``units_per``
gives the exact ratio instead (1ba is 1/100ep), for sums and fractions that must not round.
``iter`` and ``sec`` link only to ``dur``.
"""

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

from discospace.core.errors import TimeConversionError, TimeError
from discospace.core.time import Time, TimeUnit, as_unit, plain_number, snapped

EP, BA, SP, TOK, DUR = (TimeUnit.EPOCH, TimeUnit.BATCH, TimeUnit.SAMPLE, TimeUnit.TOKEN,
                        TimeUnit.DURATION)  # fmt: skip


@dataclass(frozen=True)
class TimeFacts:
    """What is known about a training run, for converting between units."""

    samples_per_epoch: int | None = None
    batch_size: int | None = None
    tokens_per_epoch: int | None = None
    tokens_per_sample: int | None = None
    max_duration: Time | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "max_duration" or value is None:
                continue
            value = plain_number(value)  # numpy's int64, as pandas hands facts over
            object.__setattr__(self, item.name, value)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise TimeError(f"{item.name} must be a whole number above 0, not {value!r}")
        if self.max_duration is not None:
            maximum = self.max_duration
            if not isinstance(maximum, Time):
                object.__setattr__(self, "max_duration", Time.parse(maximum))
            if self.max_duration.unit is DUR or self.max_duration.value <= 0:
                raise TimeError(f"max_duration must be a positive time not in dur, not {maximum}")


def merge_facts(facts: TimeFacts | None, known: Mapping[str, Any]) -> TimeFacts:
    """``facts`` with keyword facts added (a keyword wins)."""
    names = {item.name for item in fields(TimeFacts)}
    unknown = sorted(set(known) - names)
    if unknown:
        raise TimeError(f"unknown time fact {unknown[0]}: use one of {', '.join(sorted(names))}")
    return replace(facts or TimeFacts(), **known)


def _batches_per_epoch(facts: TimeFacts) -> int:
    return math.ceil(facts.samples_per_epoch / facts.batch_size)  # type: ignore[operator]


Ratio = Callable[[TimeFacts], Fraction]

_LINKS: dict[tuple[TimeUnit, TimeUnit], tuple[tuple[str, ...], Ratio]] = {
    (EP, BA): (("samples_per_epoch", "batch_size"), lambda f: Fraction(_batches_per_epoch(f))),
    (BA, EP): (("samples_per_epoch", "batch_size"), lambda f: Fraction(1, _batches_per_epoch(f))),
    (EP, SP): (("samples_per_epoch",), lambda f: Fraction(f.samples_per_epoch)),  # type: ignore[arg-type]
    (SP, EP): (("samples_per_epoch",), lambda f: Fraction(1, f.samples_per_epoch)),
    (BA, SP): (("batch_size",), lambda f: Fraction(f.batch_size)),  # type: ignore[arg-type]
    (SP, BA): (("batch_size",), lambda f: Fraction(1, f.batch_size)),
    (EP, TOK): (("tokens_per_epoch",), lambda f: Fraction(f.tokens_per_epoch)),  # type: ignore[arg-type]
    (TOK, EP): (("tokens_per_epoch",), lambda f: Fraction(1, f.tokens_per_epoch)),
    (SP, TOK): (("tokens_per_sample",), lambda f: Fraction(f.tokens_per_sample)),  # type: ignore[arg-type]
    (TOK, SP): (("tokens_per_sample",), lambda f: Fraction(1, f.tokens_per_sample)),
}
"""How many of the second unit make one of the first; a path multiplies its links' ratios, so a
conversion rounds once, at its end, even through a coarser unit (550ba is 5,500,000tok at 100
batches and 10^6 tokens an epoch, not 5 whole epochs' worth)."""


_FINENESS = {TOK: 1, SP: 2, BA: 3, EP: 4}
"""Finer units count more per run; a dur is counted in the finer of its target and maximum."""


def _paths(start: TimeUnit, end: TimeUnit, seen: tuple[TimeUnit, ...] = ()) -> Iterator[list]:
    """Every simple path of links from ``start`` to ``end``."""
    if start == end:
        yield []
        return
    for (source, target), _ in _LINKS.items():
        if source == start and target not in seen and target != start:
            for rest in _paths(target, end, (*seen, start)):
                yield [(source, target), *rest]


def _missing(path: list[tuple[TimeUnit, TimeUnit]], facts: TimeFacts) -> list[str]:
    needed = dict.fromkeys(name for link in path for name in _LINKS[link][0])
    return [name for name in needed if getattr(facts, name) is None]


def _convert_counted(time: Time, unit: TimeUnit, facts: TimeFacts) -> Time:
    """Conversion between whole units by the shortest path whose facts are all known, rounded
    down once, at the end."""
    path = _known_path(time.unit, unit, facts, str(time))
    return Time(math.floor(int(time.value) * _path_ratio(path, facts)), unit)


def _path_ratio(path: list[tuple[TimeUnit, TimeUnit]], facts: TimeFacts) -> Fraction:
    ratio = Fraction(1)
    for link in path:
        ratio *= _LINKS[link][1](facts)
    return ratio


def _require_max(time: Time, unit: TimeUnit, facts: TimeFacts) -> Time:
    if facts.max_duration is None:
        raise TimeConversionError(f"converting {time} to {unit.value} needs max_duration")
    return facts.max_duration


def convert(time: Time, unit: TimeUnit, facts: TimeFacts) -> Time:
    """``time`` in ``unit`` (see the module docstring for the links and rounding)."""
    if time.unit is unit:
        return time
    if time.unit is DUR:
        maximum = _require_max(time, unit, facts)
        if _FINENESS.get(unit, 0) < _FINENESS.get(maximum.unit, 0):
            maximum = _convert_counted(maximum, unit, facts)
        share = snapped(Decimal(repr(time.value)) * Decimal(maximum.value))
        return convert(Time(math.floor(share), maximum.unit), unit, facts)
    if unit is DUR:
        maximum = _require_max(time, unit, facts)
        return Time(elapsed_fraction(time, maximum, facts), DUR)
    return _convert_counted(time, unit, facts)


def share_of(fraction: float, whole: float) -> float:
    """`fraction` of `whole`, as exactly as the two are written (0.07 of 100 is 7, not the
    float product 7.000000000000001; 0.05 of 10 is 0.5), snapped as `dur` conversions are: a
    share that must stay a fraction of a second, where `convert` gives whole units."""
    return float(snapped(Decimal(repr(float(fraction))) * Decimal(repr(float(whole)))))


def elapsed_fraction(elapsed: Time, max_duration: Time, facts: TimeFacts) -> float:
    """``elapsed`` as a fraction of ``max_duration``, exactly (no unit is rounded)."""
    if max_duration.unit is DUR:
        raise TimeError(f"a maximum duration cannot be in dur ({max_duration})")
    if max_duration.value <= 0:
        raise TimeError(f"a maximum duration must be above zero, not {max_duration}")
    if elapsed.unit is DUR:
        return float(elapsed.value)
    ratio = units_per(elapsed.unit, max_duration.unit, facts)
    return float(elapsed.value * ratio / max_duration.value)


def units_per(source: TimeUnit | str, target: TimeUnit | str, facts: TimeFacts) -> Fraction:
    """How many ``target`` make one ``source``, exactly: 1ep is 125ba and 1ba is 1/125ep at 125
    batches per epoch; ``dur`` goes through max_duration. Raises ``TimeConversionError`` naming
    what is missing, as ``convert`` does."""
    source, target = as_unit(source), as_unit(target)
    if source is target:
        return Fraction(1)
    if DUR in (source, target):
        maximum = facts.max_duration
        if maximum is None:
            raise TimeConversionError(
                f"converting {source.value} to {target.value} needs max_duration"
            )
        if source is DUR:
            return maximum.value * units_per(maximum.unit, target, facts)
        return units_per(source, maximum.unit, facts) / maximum.value
    return _path_ratio(_known_path(source, target, facts), facts)


def _known_path(
    source: TimeUnit, target: TimeUnit, facts: TimeFacts, shown: str = ""
) -> list[tuple[TimeUnit, TimeUnit]]:
    """The shortest path of links whose facts are all known; a ``TimeConversionError`` when no
    link or a missing fact keeps the units apart, naming `shown` (the time converted) if given,
    else the units."""
    paths = sorted(_paths(source, target), key=lambda p: (len(_missing(p, facts)), len(p)))
    if not paths:
        lead = f"{shown} cannot be converted to {target.value}: " if shown else ""
        raise TimeConversionError(f"{lead}no conversion links {source.value} and {target.value}")
    missing = _missing(paths[0], facts)
    if missing:
        raise TimeConversionError(
            f"converting {shown or source.value} to {target.value} needs {', '.join(missing)}"
        )
    return paths[0]
