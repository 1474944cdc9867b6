"""A pipeline as tables: its jobs (``operation show``, ``--watch``), its comparison and trials
(``discospace pipeline compare``, ``pipeline trials``).

A job's result is a JSON document (a child's outcome, a hook's refined space, a trial's recipe
and objective); a table shows it in short (``result_text``): a trial's objective and values, a
child's best values, or a hook's keys with their values cut at ``SHORT`` characters (a refined
space's whole spec and a measure job's rows are left to ``--json``).
"""

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console

from discospace.cli.views import number_text, print_line, print_wide, table

if TYPE_CHECKING:
    from discospace.client import (
        OperationProgress,
        PipelineComparison,
        PipelineJob,
        TargetComparison,
        TargetStatistics,
        TrialPoint,
    )

SHORT = 60
LEFT_TO_JSON = frozenset({"space", "rows", "entities", "entity_ids"})
"""Result keys too long for a table: a refined space's spec, a measure job's every row."""
JOB_COLUMNS = ("stage", "job", "kind", "status", "child_operation_id", "done", "result")
TARGET_COLUMNS = ("target", "stage", "count", "mean", "std", "min", "max", "change")
TRIAL_COLUMNS = ("trial", "status", "values", "objective", "child_operation_id")
MEASURED_COLUMNS = ("stage", "trial", "job", "child_operation_id", "results", "valid")


def number(value: float | None) -> str:
    """A number as a table shows it (6 significant digits); ``-`` for none."""
    return "-" if value is None else number_text(value)


def short(value: Any) -> str:
    """A JSON value in one short line."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= SHORT else text[: SHORT - 3] + "..."


def values_text(values: Mapping[str, Any]) -> str:
    """``name=value, ...`` with numbers to 6 significant digits."""
    return ", ".join(
        f"{name}={number(v) if isinstance(v, float) else short(v)}" for name, v in values.items()
    )


def result_text(job: "PipelineJob") -> str:
    """A job's result (or why it failed) in short; see the module doc."""
    if job.reason:
        return job.reason
    result = job.result
    if not result:
        return _child_best(job)
    objective = result.get("objective")
    if isinstance(objective, int | float) and not isinstance(objective, bool):  # a trial's value
        shown = f"{result.get('property', 'objective')}={number(objective)}"
        recipe = result.get("values")
        return shown + (f" ({values_text(recipe)})" if isinstance(recipe, Mapping) else "")
    if isinstance(result.get("best_values"), Mapping):
        return "best " + values_text(result["best_values"])
    kept = {key: value for key, value in result.items() if key not in LEFT_TO_JSON}
    return ", ".join(f"{key}={short(value)}" for key, value in kept.items())


def _child_best(job: "PipelineJob") -> str:
    best = job.child.best if job.child else None
    return "" if best is None else f"best {best.property}={number(best.value)}"


def done_text(job: "PipelineJob") -> str:
    """``done/total`` of the job's child (``done/requested`` without a total); ``-`` without
    a child."""
    child = job.child
    if child is None:
        return "-"
    total = child.total if child.total is not None else child.counts.requested
    return f"{child.done}/{total}"


def job_rows(jobs: Sequence["PipelineJob"], indent: str = "") -> list[dict[str, Any]]:
    """One row per job for ``JOB_COLUMNS``."""
    return [
        {
            "stage": job.stage,
            "job": indent + job.job,
            "kind": job.kind,
            "status": job.status,
            "child_operation_id": job.child_operation_id,
            "done": done_text(job),
            "result": result_text(job),
        }
        for job in jobs
    ]


def print_jobs(progress: "OperationProgress", console: Console | None = None) -> None:
    """``operation show``'s jobs of a pipeline, and why each failed job failed."""
    console = console or Console()
    print_wide(table("Jobs", job_rows(progress.jobs), JOB_COLUMNS), console)
    for job in progress.jobs:
        if job.status in ("failed", "optional-failed"):
            print_line(console, f"job {job.job} ({job.stage}) {job.status}: {job.reason}")


def print_comparison(comparison: "PipelineComparison", console: Console | None = None) -> None:
    """``pipeline compare``: targets before and after, the objective, the jobs, the trials."""
    console = console or Console()
    print_line(console, f"Pipeline {comparison.operation_id} ({comparison.status})")
    if comparison.targets:
        rows = [row for target in comparison.targets for row in _target_rows(target)]
        title = f"Targets before (probe) and after ({len(comparison.targets)})"
        print_wide(table(title, rows, TARGET_COLUMNS, counted=False), console)
    else:
        print_line(
            console,
            "no target is measured both by the probe stage and by the execute or evaluate stage",
        )
    if comparison.objective is not None:
        print_line(console, objective_line(comparison))
    if comparison.jobs:
        rows = [job.model_dump() for job in comparison.jobs]
        print_wide(table("Jobs measured", rows, MEASURED_COLUMNS), console)
    if comparison.trials:
        print_wide(table("Trials", trial_rows(comparison.trials), TRIAL_COLUMNS), console)


def _target_rows(target: "TargetComparison") -> list[dict[str, Any]]:
    after = target.after_target
    stages = [
        (target.target, "probe", target.before),
        (after, "execute", target.execute),
        (after, "evaluate", target.evaluate),
    ]
    rows = [_statistics_row(name, stage, stats) for name, stage, stats in stages if stats]
    rows[-1]["change"] = change_text(target.change, target.relative_change)
    return rows


def _statistics_row(target: str, stage: str, stats: "TargetStatistics") -> dict[str, Any]:
    return {
        "target": target,
        "stage": stage,
        "count": stats.count,
        "mean": number(stats.mean),
        "std": number(stats.std),
        "min": number(stats.min),
        "max": number(stats.max),
        "change": None,
    }


def change_text(change: float | None, relative: float | None) -> str | None:
    """``+0.25 (+12.5%)``; None without a change."""
    if change is None:
        return None
    return f"{change:+.6g}" + (f" ({relative:+.1%})" if relative is not None else "")


def objective_line(comparison: "PipelineComparison") -> str:
    """``held_out_loss (min): baseline 3.2 (probe_walk) -> refined 2.9 (trial 3, recheck):
    -0.3 (-9.4%), better``, or what is missing."""
    objective = comparison.objective
    assert objective is not None
    head = f"{objective.property} ({objective.direction}): "
    if objective.baseline is None or objective.refined is None:
        return head + objective.note
    baseline, refined = objective.baseline, objective.refined
    verdict = "better" if objective.better else "not better"
    return (
        f"{head}baseline {number(baseline.value)} ({_where(baseline.job, baseline.trial)}) -> "
        f"refined {number(refined.value)} ({_where(refined.job, refined.trial)}): "
        f"{change_text(objective.change, objective.relative_change)}, {verdict}"
    )


def _where(job: str, trial: int | None) -> str:
    return job if trial is None else f"trial {trial}, {job}"


def trial_rows(trials: Sequence["TrialPoint"]) -> list[dict[str, Any]]:
    """One row per trial for ``TRIAL_COLUMNS``."""
    return [
        {
            "trial": trial.trial,
            "status": trial.status,
            "values": values_text(trial.values) or None,
            "objective": number(trial.objective) if trial.objective is not None else trial.reason,
            "child_operation_id": trial.child_operation_id,
        }
        for trial in trials
    ]
