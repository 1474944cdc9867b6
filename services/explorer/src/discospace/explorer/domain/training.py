"""Training amounts: how much an operation's measurements trained, in the unit of its budget.

`stopping.max_training` (a time: `50ep`, `2e6tok`, `3dur`) stops an operation once its measured
results have trained that much in total. Each result is converted on its own, with its own facts:

- Its amount: the first of these that converts to the budget's unit.
  1. A count among its values: `trained_epochs` or `target_epoch` (the replay's epochs trained)
     in ep, `trained_batches` in ba, `trained_samples` in sp, `trained_tokens` in tok.
  2. The `duration` it was asked to train (the entity's value, else the experiment's option), a
     time such as `20ba`, `1ep` or `2000tok`, as the whole batches it trains: a counted duration
     rounds down to whole batches, never below one, as `cpu_train` and `gpu_train` train it
     (`2000tok` of batches of 512 tokens trains 3 batches, 1536 tokens; their untimed warm-up
     step is not counted). Without the facts to convert it to batches, as asked.
  3. A rate times the runtime among its values: `train_samples_per_second` x `train_runtime` in
     sp, `train_tokens_per_second` x `train_runtime` in tok, rounded to a whole number.
  4. `train_runtime` in sec.
- Its facts, from its values, else its entity's values, else the experiment's options:
  `batch_size`, `samples_per_epoch`, `tokens_per_sample` (else `model_max_length`),
  `tokens_per_epoch`, and its maximum: `max_duration` (a time), else `max_epochs` above 0 in ep.
  Run controls an operator passes with a request are not read.

Sums are exact (`discospace.core.time_conversion.units_per`): many small amounts add up without
rounding. In a budget in `dur`, each result counts as a fraction of its own maximum.

- A reused result trained nothing for this operation: it is not counted.
- An invalid result counts only an amount its values report (usually none: a run that ran out of
  memory trained nothing known), never the duration it was asked for.
- A valid result none of whose amounts converts is not counted; how many and the first reason are
  said when the operation completes. `check_budget` refuses, when the operation starts, a budget
  that no experiment of the space can count.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from discospace.core import ParameterizedExperiment, Time, TimeUnit
from discospace.core.canonical import Value
from discospace.core.errors import TimeError
from discospace.core.results import as_number
from discospace.core.time_conversion import TimeFacts, units_per
from discospace.events import StoppingRules
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace

EP, BA, SP, TOK, SEC, DUR = (TimeUnit.EPOCH, TimeUnit.BATCH, TimeUnit.SAMPLE, TimeUnit.TOKEN,
                             TimeUnit.SECOND, TimeUnit.DURATION)  # fmt: skip
REPORTED: dict[str, TimeUnit] = {
    "trained_epochs": EP,
    "target_epoch": EP,
    "trained_batches": BA,
    "trained_samples": SP,
    "trained_tokens": TOK,
}
RATES: dict[str, TimeUnit] = {"train_samples_per_second": SP, "train_tokens_per_second": TOK}
RUNTIME = "train_runtime"
DURATION = "duration"
FACTS: dict[str, tuple[str, ...]] = {
    "batch_size": ("batch_size",),
    "samples_per_epoch": ("samples_per_epoch",),
    "tokens_per_sample": ("tokens_per_sample", "model_max_length"),
    "tokens_per_epoch": ("tokens_per_epoch",),
}
MAXIMA = ("max_duration", "max_epochs")


@dataclass(frozen=True)
class Amount:
    """An amount of training: an exact number of a unit."""

    value: Fraction
    unit: TimeUnit
    asked: bool = False
    """The duration the run was asked to train (it trains whole batches of it)."""

    def __str__(self) -> str:
        return shown(self.value, self.unit)


def shown(value: Fraction, unit: TimeUnit) -> str:
    """`51.2ep`, `1.094ep`, `0.156ep`, `3dur`: a whole number as it is, else a few digits."""
    if value.denominator == 1 and abs(value.numerator) < 10**15:
        return f"{value.numerator}{unit.value}"
    if abs(value) >= 10**15:  # a result reporting absurd figures: beyond a float, perhaps
        return f"{Decimal(value.numerator) / Decimal(value.denominator):.4g}{unit.value}"
    number = float(value)
    text = f"{number:.3f}".rstrip("0").rstrip(".") if abs(number) >= 1 else f"{number:.3g}"
    return f"{text}{unit.value}"


def exact(time: Time) -> Fraction:
    """A time's number as a fraction (a dur as the decimal it was written as)."""
    return Fraction(repr(time.value))


# -- one result ----------------------------------------------------------------------------------


def trained_by(result: PairResult, options: Mapping[str, Value], unit: TimeUnit) -> Fraction:
    """What `result` trained, in `unit`; raises `TimeError` saying why it cannot be counted."""
    stated = [] if result.reused else list(amounts(result, {**options, **result.entity_values}))
    if not stated and (result.reused or not result.is_valid):
        return Fraction(0)
    if not stated:
        raise TimeError("it reports no training amount")
    try:
        facts = facts_of({**options, **result.entity_values, **result.values})
        unusable: TimeError | None = None
    except TimeError as error:  # an amount in the budget's unit needs no fact: still counted
        facts, unusable = TimeFacts(), error
    problems = []
    for amount in stated:
        if amount.value < 0:  # a count no run can have: it would lower the tally
            problems.append(f"{amount} is below zero")
            continue
        try:
            if amount.asked and amount.unit in (EP, BA, SP, TOK):
                amount = _whole_batches(amount, facts)
            return amount.value * units_per(amount.unit, unit, facts)
        except TimeError as error:
            problems.append(f"{amount} cannot be counted in {unit.value}: {error}")
    if unusable is not None and len(problems) == len(stated):
        raise unusable  # why no amount converted: the fact it would have needed is unusable
    raise TimeError(problems[0])


def amounts(result: PairResult, properties: Mapping[str, Value]) -> Iterator[Amount]:
    """The amounts a result states, in the order they are tried (see the module docstring)."""
    values = result.values
    for name, unit in REPORTED.items():
        count = _fraction(values.get(name))
        if count is not None:
            yield Amount(count, unit)
    if result.is_valid:
        asked = _time(properties.get(DURATION))
        if asked is not None:
            yield Amount(exact(asked), asked.unit, asked=True)
    runtime = as_number(values.get(RUNTIME))
    for name, unit in RATES.items():
        rate = as_number(values.get(name))
        if rate is not None and runtime is not None and math.isfinite(rate * runtime):
            yield Amount(Fraction(round(rate * runtime)), unit)  # (two huge figures: none)
    if runtime is not None:
        yield Amount(Fraction(repr(runtime)), SEC)


def _whole_batches(amount: Amount, facts: TimeFacts) -> Amount:
    """The whole batches a run asked to train `amount` trains: rounded down, never below one;
    the amount as asked when the facts do not convert it to batches."""
    try:
        batches = amount.value * units_per(amount.unit, BA, facts)
    except TimeError:
        return amount
    return Amount(Fraction(max(1, math.floor(batches))), BA)


def facts_of(known: Mapping[str, Value]) -> TimeFacts:
    """The conversion facts among `known` (raises `TimeError` for an unusable one)."""
    found: dict[str, object] = {}
    for fact, names in FACTS.items():
        value = next((known[name] for name in names if known.get(name) is not None), None)
        if value is not None:
            found[fact] = _whole(value)
    return TimeFacts(**found, max_duration=maximum_of(known))


def maximum_of(known: Mapping[str, Value]) -> Time | None:
    """The run's maximum: `max_duration` (a time), else `max_epochs` above 0 in epochs."""
    stated = _time(known.get("max_duration"))
    if stated is not None:
        return stated
    epochs = as_number(known.get("max_epochs"))
    return Time(epochs, EP) if epochs is not None and epochs > 0 else None


def _fraction(value: object) -> Fraction | None:
    number = as_number(value)
    return None if number is None else Fraction(repr(value))


def _time(value: object) -> Time | None:
    try:
        return Time.parse(value) if isinstance(value, str) else None
    except TimeError:
        return None


def _whole(value: object) -> object:
    """8.0 is the whole number 8; anything else is left for `TimeFacts` to accept or refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# -- an operation --------------------------------------------------------------------------------


@dataclass
class TrainingTally:
    """What an operation's results trained, in the budget's unit, reading each result once."""

    budget: Time
    read: int = 0
    trained: Fraction = Fraction(0)
    uncounted: int = 0
    first_problem: str = ""

    @classmethod
    def of(cls, rules: StoppingRules) -> TrainingTally | None:
        return None if rules.max_training is None else cls(rules.max_training)

    def update(self, outcomes: Sequence[PairResult], space: KnownSpace) -> None:
        for outcome in outcomes[self.read :]:
            self._read(outcome, space)
        self.read = len(outcomes)

    def _read(self, outcome: PairResult, space: KnownSpace) -> None:
        experiment = space.experiment(outcome.experiment_id)
        options = experiment.option_values if experiment is not None else {}
        try:
            self.trained += trained_by(outcome, options, self.budget.unit)
        except TimeError as error:
            self.uncounted += 1
            self.first_problem = self.first_problem or f"{outcome.experiment_id}: {error}"

    @property
    def reached(self) -> bool:
        return self.trained >= exact(self.budget)

    def summary(self) -> str:
        """`trained 51.2ep of 50ep`, and the results not counted, if any, with the first reason."""
        unit = self.budget.unit
        text = f"trained {shown(self.trained, unit)} of {shown(exact(self.budget), unit)}"
        if self.uncounted:
            results = "result" if self.uncounted == 1 else "results"
            text += f" ({self.uncounted} {results} not counted, first: {self.first_problem})"
        return text


# -- at the door ---------------------------------------------------------------------------------


def check_budget(rules: StoppingRules, space: KnownSpace) -> str | None:
    """Why no result of the space could count towards `max_training`, or None when some can."""
    budget = rules.max_training
    if budget is None:
        return None
    if budget.unit is DUR and not any(_declares_maximum(e, space) for e in space.experiments):
        return (
            f"max_training {shown(exact(budget), DUR)} is a fraction of each run's maximum, and "
            f"no experiment of space '{space.space_id}' declares one (max_duration or max_epochs)"
        )
    if any(_could_count(e, space, budget.unit) for e in space.experiments):
        return None
    return (
        f"max_training {budget} cannot be counted: no experiment of space '{space.space_id}' "
        "reports a training amount (epochs, batches, samples, tokens, seconds or a duration) "
        f"with the facts that convert it to {budget.unit.value}"
    )


def _declares_maximum(experiment: ParameterizedExperiment, space: KnownSpace) -> bool:
    declared = set(space.entity_space.names) | set(experiment.experiment.target_properties)
    try:
        return bool(declared & set(MAXIMA)) or maximum_of(experiment.option_values) is not None
    except TimeError:
        return True  # declared, if not usable: each result will say why


def _could_count(experiment: ParameterizedExperiment, space: KnownSpace, unit: TimeUnit) -> bool:
    """Whether a valid result of `experiment` could be counted in `unit`: a probe result whose
    targets and constitutive properties are all 1. A duration or maximum the entity space
    explores is only known per entity: such an experiment is given the benefit of the doubt."""
    explored = set(space.entity_space.names)
    if explored & {DURATION, *MAXIMA}:
        return True
    probe = PairResult(
        entity_id="probe",
        entity_values=dict.fromkeys(explored, 1),
        experiment_id=experiment.id,
        is_valid=True,
        values=dict.fromkeys(experiment.experiment.target_properties, 1),
        invalid_reason=None,
        reused=False,
    )
    try:
        trained_by(probe, experiment.option_values, unit)
    except TimeError:
        return False
    return True
