"""A pipeline's jobs, and its progress from its children's (pure, no I/O).

A pipeline (`operator: pipeline`) measures nothing itself: its jobs ask for child operations.
What the views show of it:

- its jobs (`pipeline_jobs`), in the order they run: the jobs of its spec (`parameters.options`,
  stages probe, refine, execute, evaluate), or its trials `trial-0 .. trial-<count-1>` (stage
  `trials`) when it has trials, then any job its events name that the spec does not. Each job's
  status comes from the pipeline's job events: `running` once started, `completed` with its
  result, `failed` or `optional-failed` (recorded, the pipeline went on) with the reason;
  `pending` before it started, and once the pipeline ended, `cancelled` (started, never ended)
  or `skipped` (never started). A job's child operation is shown in short (`ChildProgress`).
- its counts (`with_jobs`): those of its children added up while it runs (or when its end
  carried none), the counts its end reported once it ended, so the list and one operation agree;
  its `total` is unknown (later jobs' children do not exist yet).
- its best: the best its end reported; else the best of its trials' objective values, or of its
  children's bests for the pipeline's objective (`parameters.objective`, else the trials').
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from discospace.core import DiscospaceError, Objective, as_number, target_of
from discospace.core.pipelines import (
    RESULT_STAGES,
    PipelineSpec,
    parse_pipeline,
    ranking_objective,
)
from discospace.events import OperationParameters
from discospace.projector.models import (
    BestSoFar,
    ChildProgress,
    JobStatus,
    OperationCountsView,
    OperationProgress,
    PipelineJob,
)
from discospace.projector.queries import OperationRow

PIPELINE = "pipeline"
TRIALS_STAGE = "trials"
JOB_EVENTS = frozenset({"PipelineJobStarted", "PipelineJobCompleted", "PipelineJobFailed"})
JobKey = tuple[int | None, str]
"""A job of a pipeline: (trial, job name); trial is None outside trials."""


@dataclass(frozen=True)
class _Planned:
    """A job the pipeline's spec says it will run."""

    stage: str
    kind: str
    optional: bool


@dataclass
class _Seen:
    """What a pipeline's job events say of one job."""

    stage: str
    started: dict[str, Any] | None = None
    started_at: datetime | None = None
    end_type: str | None = None
    end: dict[str, Any] = field(default_factory=dict)
    ended_at: datetime | None = None


def is_job_row(row: OperationRow) -> bool:
    """Whether the row is one of a pipeline's job events (not a lifecycle event)."""
    return row.type in JOB_EVENTS


def child_operation_ids(rows: Iterable[OperationRow]) -> list[str]:
    """The child operations a pipeline's jobs asked for, in the order they started."""
    ids: list[str] = []
    for row in rows:
        if row.type == "PipelineJobStarted":
            child = json.loads(row.payload).get("child_operation_id")
            if isinstance(child, str) and child not in ids:
                ids.append(child)
    return ids


def pipeline_spec(parameters: OperationParameters) -> PipelineSpec | None:
    """The pipeline `parameters.options` describe; None when they describe none."""
    try:
        return parse_pipeline(parameters.options)
    except DiscospaceError:
        return None


def pipeline_jobs(
    rows: Sequence[OperationRow],
    parameters: OperationParameters,
    ended: bool,
    child: Callable[[str], ChildProgress | None],
) -> list[PipelineJob]:
    """The pipeline's jobs (see the module doc); `child` gives a child operation's progress."""
    planned = _planned(pipeline_spec(parameters))
    seen = _seen(rows)
    keys = [*planned, *(key for key in seen if key not in planned)]
    return [_job(key, planned.get(key), seen.get(key), ended, child) for key in keys]


def _planned(spec: PipelineSpec | None) -> dict[JobKey, _Planned]:
    if spec is None:
        return {}
    if spec.trials is not None:
        return {
            (number, f"trial-{number}"): _Planned(TRIALS_STAGE, "trial", optional=True)
            for number in range(spec.trials.count)
        }
    return {
        (None, job.name): _Planned(stage, job.kind, job.optional)
        for stage in ("probe", "refine", "execute", "evaluate")
        for job in getattr(spec.stages, stage)
    }


def _seen(rows: Sequence[OperationRow]) -> dict[JobKey, _Seen]:
    """Each job's events, in the order the jobs first appear."""
    seen: dict[JobKey, _Seen] = {}
    for row in rows:
        if not is_job_row(row):
            continue
        payload = json.loads(row.payload)
        facts = seen.setdefault((payload.get("trial"), payload["job"]), _Seen(payload["stage"]))
        if row.type == "PipelineJobStarted":
            facts.started, facts.started_at = payload, row.occurred_at
        elif facts.end_type is None:
            facts.end_type, facts.end, facts.ended_at = row.type, payload, row.occurred_at
    return seen


def _job(
    key: JobKey,
    planned: _Planned | None,
    seen: _Seen | None,
    ended: bool,
    child: Callable[[str], ChildProgress | None],
) -> PipelineJob:
    trial, name = key
    started = (seen.started if seen else None) or {}
    child_id = started.get("child_operation_id")
    return PipelineJob(
        job=name,
        stage=planned.stage if planned else seen.stage if seen else "",
        trial=trial,
        kind=planned.kind if planned else None,
        optional=planned.optional if planned else bool(seen and seen.end.get("optional")),
        status=_status(seen, ended),
        child_operation_id=child_id,
        space_id=started.get("space_id"),
        started_at=seen.started_at if seen else None,
        ended_at=seen.ended_at if seen else None,
        result=seen.end.get("result") if seen else None,
        reason=seen.end.get("reason") if seen else None,
        child=child(child_id) if child_id else None,
    )


def _status(seen: _Seen | None, ended: bool) -> JobStatus:
    if seen is None or (seen.started is None and seen.end_type is None):
        return "skipped" if ended else "pending"
    if seen.end_type == "PipelineJobCompleted":
        return "completed"
    if seen.end_type == "PipelineJobFailed":
        return "optional-failed" if seen.end.get("optional") else "failed"
    return "cancelled" if ended else "running"


def child_progress(progress: OperationProgress) -> ChildProgress:
    """An operation's progress in short, as its pipeline's job shows it."""
    return ChildProgress(
        operation_id=progress.operation_id,
        operator=progress.operator,
        space_id=progress.space_id,
        status=progress.status,
        counts=progress.counts,
        done=progress.done,
        total=progress.total,
        best=progress.best,
        ending=progress.stop_detail or progress.failure_reason or "",
    )


def with_jobs(
    progress: OperationProgress,
    rows: Sequence[OperationRow],
    child: Callable[[str], OperationProgress | None],
    reported: bool = False,
) -> OperationProgress:
    """A pipeline's progress with its jobs, counts and best (see the module doc); `reported`:
    its counts and best are those its end reported."""
    parameters = OperationParameters.model_validate(progress.parameters)

    def short(child_id: str) -> ChildProgress | None:
        found = child(child_id)
        return None if found is None else child_progress(found)

    jobs = pipeline_jobs(rows, parameters, progress.ended_at is not None, short)
    counts = progress.counts if reported else added_counts(j.child for j in jobs if j.child)
    best = progress.best or jobs_best(jobs, pipeline_objective(parameters))
    update = {"jobs": jobs, "counts": counts, "done": counts.done, "total": None, "best": best}
    return progress.model_copy(update=update)


def added_counts(children: Iterable[ChildProgress]) -> OperationCountsView:
    """Several children's counts added up."""
    total = dict.fromkeys(OperationCountsView.model_fields, 0)
    for found in children:
        for name, value in found.counts.model_dump().items():
            total[name] += value
    return OperationCountsView(**total)


def pipeline_objective(parameters: OperationParameters) -> Objective | None:
    """The objective its trials are ranked by, as the explorer ranks them; without trials, its
    parameters'."""
    return ranking_objective(parameters.options, parameters.objective)


def jobs_best(jobs: Sequence[PipelineJob], objective: Objective | None) -> BestSoFar | None:
    """The best the pipeline names so far for `objective`, by the explorer's rule: of trials,
    the best trial's objective value (the first to reach it wins ties); else the best of the
    last execute or evaluate job that has one."""
    if objective is None:
        return None
    if not any(job.stage == TRIALS_STAGE for job in jobs):
        for job in reversed([job for job in jobs if job.stage in RESULT_STAGES]):
            found = _job_best(job, objective)
            if found is not None:
                return found
        return None
    best: BestSoFar | None = None
    for candidate in (_job_best(job, objective) for job in jobs):
        if candidate is not None and objective.improves(
            candidate.value, best.value if best else None
        ):
            best = candidate
    return best


def _job_best(job: PipelineJob, objective: Objective) -> BestSoFar | None:
    if job.stage == TRIALS_STAGE:  # only a completed trial's objective value ranks it: a
        # failed or running trial's child pipeline's best is another job's value
        return (
            _trial_best(job.result, objective) if job.status == "completed" and job.result else None
        )
    best = job.child.best if job.child else None
    if best is None or target_of(best.property) != target_of(objective.property):
        return None
    # a child searching the other way has the pipeline's worst as its best: not a candidate
    return best if best.direction == objective.direction else None


def _trial_best(result: Mapping[str, Any], objective: Objective) -> BestSoFar | None:
    """A completed trial's objective value, with its recipe values and best entity."""
    value = as_number(result.get("objective"))
    if value is None:
        return None
    values = {**_mapping(result.get("best_values")), **_mapping(result.get("values"))}
    return BestSoFar(
        property=objective.property,
        direction=objective.direction,
        value=value,
        entity_id=str(result.get("best_entity_id") or ""),
        entity_values=_mapping(result.get("best_entity_values")),
        experiment_id="",
        values={**values, target_of(objective.property): value},
    )


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}
