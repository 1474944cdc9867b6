"""What a pipeline's views add up to (pure): its trials, and its probe-versus-evaluate comparison.

Data-Juicer's sandbox is used to compare: the data (and the model) before a recipe is refined
and after. `compare_pipeline` reads that off a pipeline's jobs and their child operations'
results, for any targets, whatever the actuator:

- The runs: the pipeline itself, or, when it has trials, each trial's child pipeline (its jobs
  carry the trial's number).
- Per job with a child operation (an `operation` or `measure` job): its results (measured or
  reused) and, over the valid ones, the statistics (count, mean, sample sigma, min, max) of each
  numeric target (`JobMeasurements`).
- Per stage: the same statistics over every job of that stage, in every run.
- Before and after: the targets the probe stage measures and a later stage (execute, evaluate)
  measures too, each with its statistics before (probe), in execute and in evaluate, and the
  change of its mean from before to after (evaluate's, else execute's). A target measured
  before pairs with the same target after, else with its name under the after-prefix of a
  `pairs` entry whose before-prefix it has: by default `raw_<x>` (a statistic of the data as it
  was) pairs with `kept_<x>` (the same statistic of what the recipe kept).
- The objective (one asked for, else its trials', else the pipeline's): the unrefined baseline
  is the best value of the baseline jobs (the probe stage's, or the jobs named), the best after
  refinement the best value of the execute and evaluate stages' jobs; the change between them
  and whether it is better. An objective `<experiment>.<target>` reads only that experiment's
  results; a bare target reads every experiment's.

`trial_points` lists a pipeline's trials: their recipe values and objective value (what
`operation plot` draws against the trial number).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from discospace.client.models import OperationProgress, OperationResult, PipelineJob
from discospace.core import Objective, as_number, target_of
from discospace.core.pipelines import ranking_objective
from discospace.core.results import kept_rank, objective_source
from discospace.core.spec import Scalar

TRIALS_STAGE = "trials"
BEFORE_STAGES = ("probe",)
AFTER_STAGES = ("execute", "evaluate")
STAGES = ("probe", "refine", "execute", "evaluate")
DEFAULT_PAIRS: tuple[tuple[str, str], ...] = (("raw_", "kept_"),)
"""(before-prefix, after-prefix) of targets naming one statistic before and after processing."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class TrialPoint(_Model):
    """One trial of a pipeline: its recipe values and the value of the trials' objective."""

    trial: int
    job: str
    status: str
    values: dict[str, Scalar] = Field(
        default_factory=dict, description="The recipe values the optimizer chose for it."
    )
    objective: float | None = Field(default=None, description="None: failed, or no value.")
    property: str | None = None
    child_operation_id: str | None = None
    reason: str | None = None


class TargetStatistics(_Model):
    """A numeric target over a set of valid results."""

    count: int
    mean: float
    std: float | None = Field(description="Sample standard deviation; None below 2 values.")
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> TargetStatistics:
        """Computed on the values scaled by the power of two of the largest (exactly, the
        same figures): 1.5e308 beside 1.6e308 made their sum overflow (a traceback out of
        `pipeline compare`)."""
        power = math.frexp(max(abs(value) for value in values))[1]
        scaled = [math.ldexp(value, -power) for value in values]
        spread = _unscaled(statistics.stdev(scaled), power) if len(values) > 1 else None
        return cls(
            count=len(values),
            mean=_unscaled(statistics.fmean(scaled), power),
            std=spread,
            min=min(values),
            max=max(values),
        )


def _unscaled(value: float, power: int) -> float:
    """`value` times 2 ** `power`; infinite beyond a float (the sigma of 1.5e308 and -1.5e308)."""
    try:
        return math.ldexp(value, power)
    except OverflowError:
        return math.copysign(math.inf, value)


class JobMeasurements(_Model):
    """What one job's child operation measured."""

    stage: str
    job: str
    trial: int | None = None
    status: str
    child_operation_id: str
    experiments: list[str] = Field(description="The experiments of its results, in order.")
    results: int = Field(description="Results received, measured or reused.")
    valid: int
    statistics: dict[str, TargetStatistics] = Field(
        description="Per numeric target, over its valid results."
    )


class TargetComparison(_Model):
    """One target measured before (probe) and after (execute, evaluate)."""

    target: str
    after_target: str = Field(description="Its name after: the same, or its paired name.")
    before: TargetStatistics
    execute: TargetStatistics | None = None
    evaluate: TargetStatistics | None = None
    change: float = Field(description="Mean after (evaluate's, else execute's) minus before.")
    relative_change: float | None = Field(description="change / |mean before|; None at 0.")


class ObjectiveValue(_Model):
    """The best value of the objective among some jobs' results, and where it was measured."""

    value: float
    stage: str
    job: str
    trial: int | None = None
    child_operation_id: str
    entity_id: str
    entity_values: dict[str, Scalar] = Field(default_factory=dict)
    experiment_id: str


class ObjectiveComparison(_Model):
    """The objective of the unrefined baseline against the best after refinement."""

    property: str
    direction: Literal["min", "max"]
    baseline_jobs: list[str] = Field(description="The jobs the baseline was read from.")
    baseline: ObjectiveValue | None = None
    refined: ObjectiveValue | None = Field(
        default=None, description="The best of the execute and evaluate stages."
    )
    change: float | None = Field(default=None, description="refined - baseline.")
    relative_change: float | None = Field(default=None, description="change / |baseline|.")
    better: bool | None = Field(default=None, description="Whether refined beats baseline.")
    note: str = Field(default="", description="Why a side is missing, when one is.")


class PipelineComparison(_Model):
    """A pipeline's probe-versus-evaluate comparison (see the module doc)."""

    operation_id: str
    status: str
    objective: ObjectiveComparison | None = None
    targets: list[TargetComparison] = Field(
        description="Targets measured by the probe stage and by execute or evaluate."
    )
    stages: dict[str, dict[str, TargetStatistics]] = Field(
        description="Per stage, per numeric target, over every job of the stage."
    )
    jobs: list[JobMeasurements]
    trials: list[TrialPoint] = Field(default_factory=list)
    best_trial: TrialPoint | None = None


Run = tuple[int | None, Sequence[PipelineJob]]
"""One run of a pipeline's stages: (trial number or None, its jobs)."""


def trial_points(progress: OperationProgress) -> list[TrialPoint]:
    """The pipeline's trials in trial order (none when it has no trials)."""
    return [_trial_point(job) for job in progress.jobs if job.stage == TRIALS_STAGE]


def _trial_point(job: PipelineJob) -> TrialPoint:
    result = job.result or {}
    values = result.get("values")
    return TrialPoint(
        trial=job.trial if job.trial is not None else _trial_number(job.job),
        job=job.job,
        status=job.status,
        values=dict(values) if isinstance(values, Mapping) else {},
        objective=as_number(result.get("objective")),
        property=result.get("property") if isinstance(result.get("property"), str) else None,
        child_operation_id=job.child_operation_id,
        reason=job.reason,
    )


def _trial_number(name: str) -> int:
    suffix = name.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else 0


def best_trial(trials: Sequence[TrialPoint], objective: Objective | None) -> TrialPoint | None:
    """The trial with the best objective value (the first to reach it)."""
    if objective is None:
        return None
    best: TrialPoint | None = None
    for trial in trials:
        if objective.improves(trial.objective, best.objective if best else None):
            best = trial
    return best


def pipeline_objective(progress: OperationProgress) -> Objective | None:
    """The objective its trials are ranked by, as the explorer ranks them; without trials, its
    parameters'."""
    raw = progress.parameters.get("objective")
    own = Objective.model_validate(raw) if isinstance(raw, Mapping) else None
    return ranking_objective(progress.parameters.get("options") or {}, own)


def measured_jobs(
    runs: Iterable[Run], results: Mapping[str, Sequence[OperationResult]]
) -> list[JobMeasurements]:
    """Every job of the runs with a child operation, with what its child measured."""
    measured = []
    for trial, jobs in runs:
        for job in jobs:
            if job.child_operation_id is None or job.stage == TRIALS_STAGE:
                continue
            mine = results.get(job.child_operation_id, ())
            measured.append(
                JobMeasurements(
                    stage=job.stage,
                    job=job.job,
                    trial=trial,
                    status=job.status,
                    child_operation_id=job.child_operation_id,
                    experiments=list(dict.fromkeys(r.experiment_id for r in mine)),
                    results=len(mine),
                    valid=sum(r.is_valid for r in mine),
                    statistics=_statistics(_numbers(mine)),
                )
            )
    return measured


def kept_results(results: Sequence[OperationResult]) -> list[OperationResult]:
    """One result per entity and experiment, the one the operation counted and the store
    keeps (a valid one before an invalid one, then the earliest; `kept_rank`): a redelivered
    attempt completing beside its retry came as a second result, and was counted, averaged
    and taken as the baseline's best where every other view has one."""
    kept: dict[tuple[str, str], OperationResult] = {}
    for result in results:
        pair = (result.entity_id, result.experiment_id)
        held = kept.get(pair)
        if held is None or _rank(result) < _rank(held):
            kept[pair] = result
    return list(kept.values())


def _rank(result: OperationResult) -> tuple[bool, datetime, str]:
    """`kept_rank` of a result the API gives without its event id (a tie keeps the first)."""
    return kept_rank(result.is_valid, result.occurred_at, "")


def _numbers(results: Iterable[OperationResult]) -> dict[str, list[float]]:
    """Each numeric target's values over the valid results (booleans are not numbers)."""
    numbers: dict[str, list[float]] = {}
    for result in results:
        if not result.is_valid:
            continue
        for target, raw in result.values.items():
            value = as_number(raw)
            if value is not None:
                numbers.setdefault(target, []).append(value)
    return numbers


def _statistics(numbers: Mapping[str, Sequence[float]]) -> dict[str, TargetStatistics]:
    return {target: TargetStatistics.of(values) for target, values in numbers.items() if values}


def compare_pipeline(
    progress: OperationProgress,
    runs: Sequence[Run],
    results: Mapping[str, Sequence[OperationResult]],
    objective: Objective | None = None,
    baseline: Sequence[str] = (),
    pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
) -> PipelineComparison:
    """The pipeline's comparison (see the module doc) from its runs and its children's
    results (by child operation id), one per entity and experiment of each child
    (`kept_results`)."""
    results = {child: kept_results(rows) for child, rows in results.items()}
    jobs = measured_jobs(runs, results)
    stages = {
        stage: _statistics(_pooled(runs, results, (stage,)))
        for stage in STAGES
        if any(job.stage == stage for job in jobs)
    }
    objective = objective or pipeline_objective(progress)
    trials = trial_points(progress)
    return PipelineComparison(
        operation_id=progress.operation_id,
        status=progress.status,
        objective=None
        if objective is None
        else compare_objective(runs, results, objective, baseline),
        targets=compared_targets(stages, pairs),
        stages=stages,
        jobs=jobs,
        trials=trials,
        best_trial=best_trial(trials, pipeline_objective(progress)),  # the explorer's ranking
    )


def _pooled(
    runs: Iterable[Run], results: Mapping[str, Sequence[OperationResult]], stages: Sequence[str]
) -> dict[str, list[float]]:
    pooled: dict[str, list[float]] = {}
    for job in _jobs_of(runs, lambda j: j.stage in stages):
        for target, values in _numbers(results.get(job[1].child_operation_id or "", ())).items():
            pooled.setdefault(target, []).extend(values)
    return pooled


def _jobs_of(
    runs: Iterable[Run], keep: Callable[[PipelineJob], bool]
) -> list[tuple[int | None, PipelineJob]]:
    """The jobs of the runs with a child operation that `keep` keeps, with their trial."""
    return [
        (trial, job)
        for trial, jobs in runs
        for job in jobs
        if job.child_operation_id is not None and keep(job)
    ]


def compared_targets(
    stages: Mapping[str, Mapping[str, TargetStatistics]],
    pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
) -> list[TargetComparison]:
    """The targets measured before (probe) and after (execute or evaluate), in the probe's
    order, each with its name after (see the module doc)."""
    compared = []
    after_names = {*stages.get("execute", {}), *stages.get("evaluate", {})}
    for target, first in stages.get("probe", {}).items():
        name = after_name(target, after_names, pairs)
        if name is None:
            continue
        execute = stages.get("execute", {}).get(name)
        evaluate = stages.get("evaluate", {}).get(name)
        after = evaluate or execute
        assert after is not None
        change = after.mean - first.mean
        compared.append(
            TargetComparison(
                target=target,
                after_target=name,
                before=first,
                execute=execute,
                evaluate=evaluate,
                change=change,
                relative_change=_relative(change, first.mean),
            )
        )
    return compared


def after_name(
    target: str, measured_after: Collection[str], pairs: Sequence[tuple[str, str]]
) -> str | None:
    """The name `target` has after: itself, else its paired name; None when not measured."""
    if target in measured_after:
        return target
    for before, after in pairs:
        paired = after + target[len(before) :]
        if before and target.startswith(before) and paired in measured_after:
            return paired
    return None


def compare_objective(
    runs: Sequence[Run],
    results: Mapping[str, Sequence[OperationResult]],
    objective: Objective,
    baseline: Sequence[str] = (),
) -> ObjectiveComparison:
    """The baseline's best value of the objective against the best after refinement."""
    named = set(baseline)
    before = _jobs_of(runs, lambda j: j.job in named if named else j.stage in BEFORE_STAGES)
    after = _jobs_of(runs, lambda j: j.stage in AFTER_STAGES and j.job not in named)
    first = _best_value(before, results, objective)
    last = _best_value(after, results, objective)
    change = None if first is None or last is None else last.value - first.value
    return ObjectiveComparison(
        property=objective.property,
        direction=objective.direction,
        baseline_jobs=list(dict.fromkeys(job.job for _, job in before)),
        baseline=first,
        refined=last,
        change=change,
        relative_change=_relative(change, first.value if first else None),
        better=None if first is None or last is None else objective.better(last.value, first.value),
        note=_unheld(objective, results) or _missing(objective, first, last, bool(named)),
    )


def _unheld(objective: Objective, results: Mapping[str, Sequence[OperationResult]]) -> str:
    """A note when the jobs' valid results hold targets and none is the objective's (a
    misspelt `--objective` was told to name the baseline jobs); empty otherwise (a job still
    running, or a hook's value the trials rank by, may hold it later)."""
    held = {
        name for rows in results.values() for row in rows if row.is_valid for name in row.values
    }
    if not held or target_of(objective.property) in held:
        return ""
    return (
        f"no job's results hold '{objective.property}' (they hold {', '.join(sorted(held))}): "
        "check its name"
    )


def _best_value(
    jobs: Sequence[tuple[int | None, PipelineJob]],
    results: Mapping[str, Sequence[OperationResult]],
    objective: Objective,
) -> ObjectiveValue | None:
    best: ObjectiveValue | None = None
    for trial, job in jobs:
        child = job.child_operation_id or ""
        for result in results.get(child, ()):
            value = _objective_value(result, objective)
            if objective.improves(value, best.value if best else None):
                assert value is not None
                best = ObjectiveValue(
                    value=value,
                    stage=job.stage,
                    job=job.job,
                    trial=trial,
                    child_operation_id=child,
                    entity_id=result.entity_id,
                    entity_values=dict(result.entity_values),
                    experiment_id=result.experiment_id,
                )
    return best


def _objective_value(result: OperationResult, objective: Objective) -> float | None:
    """A valid result's value of the objective (only its experiment's, when it names one)."""
    if not result.is_valid:
        return None
    source = objective_source(objective.property, None)
    if source is not None and source.experiment_id != result.experiment_id:
        return None
    return as_number(result.values.get(target_of(objective.property)))


def _relative(change: float | None, reference: float | None) -> float | None:
    """`change` as a fraction of `|reference|`; None without both, or at 0."""
    if change is None or not reference:
        return None
    return change / abs(reference)


def _missing(
    objective: Objective,
    baseline: ObjectiveValue | None,
    refined: ObjectiveValue | None,
    named: bool,
) -> str:
    if baseline is None and named:
        return f"the baseline jobs measured no valid '{objective.property}'"
    if baseline is None:
        return (
            f"the probe stage measured no valid '{objective.property}': name the job(s) that "
            "measured the unrefined recipe as the baseline"
        )
    if refined is None:
        return f"the execute and evaluate stages measured no valid '{objective.property}'"
    return ""
