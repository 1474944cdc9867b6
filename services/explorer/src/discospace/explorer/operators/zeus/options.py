"""What `zeus_bso` reads from an operation: its options, and the knobs of the space.

Options (`parameters.options`, every one optional except `default_batch_size`):

- `eta` (0.5): weight of energy in the cost `eta * energy + (1 - eta) * max_power * time`;
- `beta` (2.0): early stopping at `beta * min_cost`;
- `num_pruning_rounds` (2), `mab_num_explorations` (2), `window_size` (0: every observation),
  `prior_mean` (0.0), `prior_precision` (0.0: flat): the pruning stage and the bandit;
- `posterior` (`robust`): how the bandit learns each arm's reward variance. `robust` pools it
  across arms (`bandit.py`; `pseudo_count`, 2.0, is what the pooled variance weighs);
  `zeus` learns it from each arm's own rewards, as Zeus does (its decisions, one for one);
  `robust` needs arms run twice (`num_pruning_rounds` or `mab_num_explorations` at least 2, no
  `window_size` of 1);
- `warm_start` (true): use runs of the same workload elsewhere in the sample store (`warm.py`);
  `shared_across` (`["gpu_model"]`): the properties in which such runs may differ;
- `default_batch_size`: where the walk starts (the job's usual batch size);
- `recurrences` (default `2 * |B| * |P|`, as the paper): how many runs must converge;
- `max_power` (default: the highest power limit of the space): the price of time in the cost;
- `max_epochs` (none): passed to every run as the input `max_epochs` when set.

The space: `batch_size` and `power_limit` (finite numeric domains), `recurrence` (any domain
holding 0, 1, 2, ...: each run is its own entity, as every retraining is its own run), and any
other property with exactly one value (the workload: dataset, network, GPU model...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from discospace.core import DiscospaceError, EntitySpace
from discospace.core.canonical import Value
from discospace.core.operation_rules import (
    ZEUS_BATCH_SIZE,
    ZEUS_POWER_LIMIT,
    ZEUS_RECURRENCE,
    zeus_check_recurrence,
    zeus_fixed_values,
    zeus_whole_numbers,
)
from discospace.core.property_domains import PropertyDomain
from discospace.explorer.operators.zeus.bandit import ROBUST_PSEUDO_COUNT
from discospace.explorer.operators.zeus.policy import Job, ZeusSettings

BATCH_SIZE, POWER_LIMIT, RECURRENCE = ZEUS_BATCH_SIZE, ZEUS_POWER_LIMIT, ZEUS_RECURRENCE


class ZeusOptions(BaseModel):
    """The options of a `zeus_bso` operation."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    eta: float = Field(default=0.5, ge=0.0, le=1.0)
    beta: float = Field(default=2.0, gt=0.0, le=1e6)
    num_pruning_rounds: int = Field(default=2, ge=0, le=1000)
    mab_num_explorations: int = Field(default=2, ge=0, le=10**6)
    window_size: int = Field(default=0, ge=0, le=10**6)
    prior_mean: float = Field(default=0.0, ge=-1e100, le=1e100)
    prior_precision: float = Field(default=0.0, ge=0.0, le=1e100)
    posterior: Literal["robust", "zeus"] = "robust"
    pseudo_count: float = Field(default=ROBUST_PSEUDO_COUNT, ge=0.0, le=1e6)
    warm_start: bool = True
    shared_across: tuple[str, ...] = ("gpu_model",)
    default_batch_size: int
    recurrences: int | None = Field(default=None, ge=1, le=10**6)
    max_power: float | None = Field(default=None, gt=0.0, le=1e6)
    max_epochs: int | None = Field(default=None, ge=1, le=10**6)

    @model_validator(mode="after")
    def _robust_sees_arms_twice(self) -> ZeusOptions:
        """The robust posterior learns a reward's spread from arms run at least twice: with
        none (one pruning round, one exploration, or a window of one run) its spread was 0,
        every posterior exact, and the bandit greedy for good: the pinned arm it removes."""
        if self.posterior != "robust":
            return self
        if max(self.num_pruning_rounds, self.mab_num_explorations) < 2 or self.window_size == 1:
            raise ValueError(
                "the robust posterior needs arms run twice: give num_pruning_rounds or "
                "mab_num_explorations of at least 2 and no window_size of 1, or posterior: zeus"
            )
        return self

    @classmethod
    def parse(cls, options: dict[str, Any]) -> ZeusOptions:
        """The options, or `DiscospaceError` with one sentence naming what is wrong."""
        try:
            return cls.model_validate(options)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            if not where:  # a rule over several options
                message = str(first["msg"]).removeprefix("Value error, ")
                raise DiscospaceError(f"zeus_bso options: {message}") from None
            raise DiscospaceError(f"zeus_bso option '{where}': {first['msg']}") from None

    @property
    def settings(self) -> ZeusSettings:
        return ZeusSettings(
            eta=self.eta,
            beta=self.beta,
            num_pruning_rounds=self.num_pruning_rounds,
            mab_num_explorations=self.mab_num_explorations,
            window_size=self.window_size,
            prior_mean=self.prior_mean,
            prior_precision=self.prior_precision,
            posterior=self.posterior,
            pseudo_count=self.pseudo_count,
        )


@dataclass(frozen=True)
class ZeusSpace:
    """The knobs of a `zeus_bso` space, and the values every run shares."""

    job: Job
    fixed: dict[str, Value]
    recurrences: int

    def point(self, batch_size: int, power_limit: int, recurrence: int) -> dict[str, Value]:
        """The entity of one run."""
        return {
            **self.fixed,
            BATCH_SIZE: batch_size,
            POWER_LIMIT: power_limit,
            RECURRENCE: recurrence,
        }


def zeus_space(space: EntitySpace, options: ZeusOptions) -> ZeusSpace:
    """The job the space describes, or `DiscospaceError` saying why it does not fit (the rules
    on the space alone are core's, which the CLI applies too)."""
    batch_sizes = zeus_whole_numbers(space, BATCH_SIZE)
    power_limits = zeus_whole_numbers(space, POWER_LIMIT)
    zeus_check_recurrence(space)
    if options.default_batch_size not in batch_sizes:
        sizes = ", ".join(str(b) for b in batch_sizes)
        raise DiscospaceError(
            f"the default batch size {options.default_batch_size} is not one of {sizes}"
        )
    max_power = options.max_power or float(max(power_limits))
    job = Job(batch_sizes, options.default_batch_size, power_limits, max_power)
    recurrences = options.recurrences or 2 * len(batch_sizes) * len(power_limits)
    _check_runs(space, recurrences)
    return ZeusSpace(job, zeus_fixed_values(space), recurrences)


def _check_runs(space: EntitySpace, recurrences: int) -> None:
    """Run i is the entity with recurrence i: 0, 1, 2, ... at least up to the runs that must
    converge (a space that stops short fails the job part-way, its runs paid for)."""
    domain = space.get_property(RECURRENCE).domain
    run = _first_missing_run(domain, recurrences)
    if run is not None:
        raise DiscospaceError(
            f"zeus_bso needs '{RECURRENCE}' to hold 0, 1, 2, ... up to at least "
            f"{recurrences - 1} (one entity per run, {recurrences} runs to converge, "
            f"retries beyond): it does not hold {run}"
        )
    missing = _gap(domain)
    if missing is not None:  # run i is recurrence i: a retry numbered into the gap failed the job
        raise DiscospaceError(
            f"zeus_bso needs '{RECURRENCE}' to hold 0, 1, 2, ... without a gap (run i is "
            f"recurrence i, the retries beyond the runs that converge too): it does not hold "
            f"{missing}"
        )


def _first_missing_run(domain: PropertyDomain, recurrences: int) -> int | None:
    """The first run 0 .. recurrences - 1 whose recurrence the domain lacks, or None. A range
    of whole numbers by 1 holds every number from its low bound to its last point: read from
    them (checked at every decision, one by one the runs cost 1.7 s at 10^6 recurrences)."""
    low, interval = domain.low, domain.interval
    if domain.is_range and type(low) is int and type(interval) is int and interval == 1:
        after = low + int(domain.size)  # the first whole number past its last point
        if low > 0 or after <= 0:  # it lacks 0
            return 0 if recurrences > 0 else None
        return after if after < recurrences else None
    return next((run for run in range(recurrences) if domain.normalise(run) is None), None)


def _gap(domain: PropertyDomain) -> int | None:
    """The first whole number a listed recurrence domain skips below its largest value (a
    range of step 1 from 0 has none), or None."""
    if domain.explicit_values is None:
        return None
    listed = sorted(v for v in domain.values if isinstance(v, int) and not isinstance(v, bool))
    return next((run for run, value in enumerate(listed) if value != run), None)
