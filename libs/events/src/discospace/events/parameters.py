"""Parameters of an operation: what every operator understands, plus operator options.

Typed, with unknown fields refused, so a misspelt parameter fails when the request is built
(or read) rather than being silently ignored. Operator-specific settings go in `options`.
`Objective` lives in `discospace.core.results`, with the rules that read results for it.

Parameters written before `objectives` was a field of its own carried it in
`options.objectives`; such parameters are upcast when read (`objectives_out_of_options`), so
every reader (the codec, the projector's stored rows, the CLI) sees the current shape. The
change is additive, so the events keep their schema version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    JsonValue,
    NonNegativeInt,
    PositiveInt,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from discospace.core.canonical import not_finite
from discospace.core.operation_rules import (
    objectives_problem,
    random_walk_options_problem,
    stopping_problem,
)
from discospace.core.results import Objective
from discospace.core.sampling import Strategy
from discospace.core.time import Time
from discospace.events.common import NonEmptyStr
from discospace.events.envelope import Record
from discospace.events.upcasting import objectives_out_of_options

__all__ = ["MAX_BATCH_SIZE", "Objective", "OperationParameters", "StoppingRules"]

MAX_BATCH_SIZE = 100_000
"""The largest window of measurements in flight: the explorer fills it in one decision round,
under the lock every operation decides under (a window of 10^8 took over a second, one of 10^12
would have built 5 x 10^8 requests at once, every other operation waiting)."""


class StoppingRules(Record):
    """Rules that end an operation before its budget is spent; the first one met wins."""

    max_measurements: PositiveInt | None = Field(
        default=None,
        description="Stop after this many completed measurements (reused ones included).",
        examples=[50],
    )
    max_duration: Time | None = Field(
        default=None,
        description="Stop once the operation has run this long (wall clock).",
        examples=["2h"],
    )
    max_measurement_time: Time | None = Field(
        default=None,
        description="Stop once the operation's measurements have taken this long in total "
        "(the sum of their durations; a reused measurement costs nothing). In seconds, or in "
        "dur as a fraction of max_duration.",
        examples=["2h", "0.5dur"],
    )
    max_training: Time | None = Field(
        default=None,
        description="Stop once the operation's measurements have trained this much in total: "
        "each measured result's training (the epochs, batches, samples, tokens or seconds it "
        "reports, or the duration it was asked to train) converted to this unit with its own "
        "facts (batch_size, samples_per_epoch, tokens per sample); a reused result trained "
        "nothing. In dur: each run as a fraction of its own maximum (max_duration or "
        "max_epochs), so 3dur is three full runs' worth.",
        examples=["50ep", "2e6tok", "3dur"],
    )
    no_improvement: PositiveInt | None = Field(
        default=None,
        description="Stop after this many measurements in a row that do not beat the best "
        "objective value (needs an objective).",
        examples=[10],
    )
    target_value: float | None = Field(
        default=None,
        description="Stop once the objective reaches this value (needs an objective).",
        examples=[5000.0],
    )


Objectives = Annotated[tuple[Objective, ...], Field(min_length=1, max_length=2)]
"""What the `objectives` parameter takes (and `options.objectives` must fit to move there)."""


class OperationParameters(Record):
    """Budget, sampling, concurrency, retries, objective and stopping rules of an operation."""

    number_entities: PositiveInt | Literal["all"] = Field(
        default="all",
        description="How many entities to measure, or all of the space.",
        examples=[20, "all"],
    )
    sampler: Strategy = Field(
        default="random",
        description="Order in which entities are drawn: random, sequential or grouped.",
        examples=["random"],
    )
    group_by: tuple[NonEmptyStr, ...] = Field(
        default=(),
        description="Properties whose values are drawn together with the grouped sampler.",
        examples=[["model_name"]],
    )
    batch_size: PositiveInt = Field(
        default=1,
        le=MAX_BATCH_SIZE,
        description="Measurements in flight at once: the explorer keeps this window full. At "
        "most 10^5 (a window is filled in one decision round, under the lock every operation "
        "decides under: 10^12 would have built 5 x 10^8 requests at once).",
        examples=[4],
    )
    max_retries: NonNegativeInt = Field(
        default=2,
        description="Retries of a measurement that failed with a retryable reason.",
        examples=[2],
    )
    single_measurement: bool = Field(
        default=True,
        description="Reuse a measurement already in the sample store instead of measuring "
        "the same entity and experiment again.",
        examples=[True],
    )
    seed: int | None = Field(
        default=None,
        description="Seed of every random choice; the explorer picks and records one when "
        "absent, so a run can be replayed.",
        examples=[7],
    )
    objective: Objective | None = Field(
        default=None,
        description="What to optimise; needed by optimizers and for the best entity.",
        examples=[{"property": "train_tokens_per_second", "direction": "max"}],
    )
    objectives: Objectives | None = Field(
        default=None,
        description="Objectives to optimise together, for operators that take several (two "
        "for a Pareto front, e.g. optuna_nsga2); default: `objective` alone.",
        examples=[
            [
                {"property": "train_tokens_per_second", "direction": "max"},
                {"property": "peak_gpu_memory_mib", "direction": "min"},
            ]
        ],
    )
    stopping: StoppingRules = Field(
        default_factory=StoppingRules,
        description="Rules that end the operation early.",
        examples=[{"max_measurements": 50, "max_duration": "2h"}],
    )
    options: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Operator-specific settings (e.g. zeus_bso's `eta`), passed to the "
        "operator as they are.",
        examples=[{"eta": 0.5}],
    )

    @model_validator(mode="before")
    @classmethod
    def _upcast(cls, data: Any) -> Any:
        """`options.objectives` moved to `objectives` when they fit it: ones that do not (three
        of them, none) were a valid request before `objectives` was a field, which the
        explorer failed at its start; moved, the stored request no longer decoded, and was
        dead-lettered at every replay. Left in `options`, it is failed at start as before."""
        if not isinstance(data, dict):
            return data
        moved = objectives_out_of_options(data)
        if moved is not data and not _fits_objectives(moved.get("objectives")):
            return data
        return moved

    @model_validator(mode="after")
    def _coherent(self) -> OperationParameters:
        if self.group_by and self.sampler != "grouped":
            raise ValueError("group_by is only used by the grouped sampler")
        if self.sampler == "grouped" and not self.group_by:
            raise ValueError("the grouped sampler needs group_by")
        needs_objective = (self.stopping.no_improvement, self.stopping.target_value)
        if self.objective is None and any(rule is not None for rule in needs_objective):
            raise ValueError("no_improvement and target_value stopping rules need an objective")
        if self.objectives is not None and "objectives" in self.options:
            raise ValueError("objectives are given twice: as objectives and options.objectives")
        where = _not_finite_at(self.options, "options")
        if where is not None:  # JSON values escape allow_inf_nan; written out, they are null
            raise ValueError(f"{where} is not a finite number")
        return self

    def objectives_to_optimise(self) -> list[Objective]:
        """`objectives` when given, else `objective` alone (none when neither is given)."""
        if self.objectives is not None:
            return list(self.objectives)
        return [self.objective] if self.objective is not None else []


def _not_finite_at(value: JsonValue, where: str) -> str | None:
    """Where in `value` a NaN or an infinity is (as `options.a.b[2]`), or None."""
    todo: list[tuple[str, JsonValue]] = [(where, value)]
    while todo:
        path, node = todo.pop()
        if not_finite(node):
            return path
        if isinstance(node, dict):
            todo.extend((f"{path}.{key}", item) for key, item in node.items())
        elif isinstance(node, list):
            todo.extend((f"{path}[{index}]", item) for index, item in enumerate(node))
    return None


def parameters_problem(data: Mapping[str, Any], operator: str | None = None) -> str | None:
    """Why `data` are no operation's parameters, briefly (`where: what`); None when they are.
    With the `operator` that would run them, also why it cannot whatever its space (the rules of
    `discospace.core.operation_rules` that need no space: stopping rules, more objectives than
    the optimizer takes, options `random_walk` does not take), as the explorer says it at that
    operation's start."""
    try:
        parameters = OperationParameters.model_validate(data)
    except ValidationError as error:
        return parameters_error_text(error)
    if operator is None:
        return None
    count = len(parameters.objectives_to_optimise())
    problem = stopping_problem(parameters.stopping)
    if problem is None and (count or "objectives" in parameters.options):
        # none given is no problem here: a pipeline passes its own objective to a job that
        # gives none (when the job's space measures it), known only once the job runs
        problem = objectives_problem(
            operator,
            count,
            parameters.options,
            parameters.objective,
            parameters.objectives or (),
        )
    if problem is None and operator == "random_walk":
        problem = random_walk_options_problem(parameters.options)
    return problem


def parameters_error_text(error: ValidationError) -> str:
    """The first problem of a validation of `OperationParameters`, as `where: what`."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "parameters"
    return f"{where}: {first['msg']}"


_OBJECTIVES: TypeAdapter[tuple[Objective, ...]] = TypeAdapter(Objectives)


def _fits_objectives(value: object) -> bool:
    """Whether `value` is what the `objectives` field takes."""
    try:
        _OBJECTIVES.validate_python(value)
    except ValidationError:
        return False
    return True
