"""A pipeline through the CLI and the client: show, list by parent, watch, compare, trials, plot.

A scripted projector (httpx's MockTransport) answers in the shape of the projector's documents:
pipeline `op-p` (probe, k-sigma refine, execute, evaluate, an optional job that failed) and
pipeline `op-t` with trials (two completed, one failed), each trial a child pipeline.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console
from typer.testing import CliRunner

import discospace.client
import discospace.client.client
from discospace.cli.main import app
from discospace.cli.pipeline_views import result_text
from discospace.cli.watch import follow
from discospace.client import (
    BestSoFar,
    ChildProgress,
    OperationCounts,
    OperationProgress,
    OperationResult,
    PipelineJob,
)

runner = CliRunner()
AT = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
LOSS = {"property": "held_out_loss", "direction": "min"}
SPACE = "space-0123456789ab"
REFINED = "space-aaaaaaaaaaaa"


def child(operation_id: str, done: int, total: int | None = None, **more: Any) -> ChildProgress:
    counts = OperationCounts(requested=total or done, measured=done)
    return ChildProgress(
        operation_id=operation_id,
        operator=more.pop("operator", "random_walk"),
        status=more.pop("status", "completed"),
        counts=counts,
        done=done,
        total=total,
        **more,
    )


def job(stage: str, name: str, status: str = "completed", **more: Any) -> PipelineJob:
    return PipelineJob(stage=stage, job=name, status=status, **more)


def result(operation: str, n: int, values: dict[str, Any], valid: bool = True) -> OperationResult:
    return OperationResult(
        occurred_at=AT + timedelta(seconds=n),
        entity_id=f"{operation}-e{n}",
        entity_values={"min_len": n},
        experiment_id="recipe-train",
        is_valid=valid,
        values=values if valid else {},
    )


def loss(value: float, kept: float, length: float, **more: float) -> dict[str, Any]:
    return {"held_out_loss": value, "kept_fraction": kept, "text_length_mean": length, **more}


PIPELINE = OperationProgress(
    operation_id="op-p",
    space_id=SPACE,
    operator="pipeline",
    status="completed",
    parameters={"objective": LOSS, "options": {}},
    counts=OperationCounts(requested=6, measured=6),
    done=6,
    stop_reason="operator_finished",
    stop_detail="4 jobs completed, 1 failed (extra)",
    best=BestSoFar(property="held_out_loss", direction="min", value=2.5, entity_id="e"),
    jobs=[
        job("probe", "probe_walk", kind="operation", child_operation_id="op-p-probe_walk",
            child=child("op-p-probe_walk", 3, 3), result={"best_values": {"held_out_loss": 2.8}}),
        job("refine", "narrow", kind="hook", space_id=SPACE,
            result={"narrowed": {"min_len": [2, 4]}, "space_id": REFINED,
                    "space": {"sample_store": "s", "entity_space": ["..."] * 50}}),
        job("execute", "search", kind="operation", child_operation_id="op-p-search",
            child=child("op-p-search", 2, 2), result={"best_values": {"held_out_loss": 2.6}}),
        job("evaluate", "recheck", kind="measure", child_operation_id="op-p-recheck",
            child=child("op-p-recheck", 1, 1, operator="points"),
            result={"best_values": {"held_out_loss": 2.5}}),
        job("evaluate", "extra", status="optional-failed", kind="hook", optional=True,
            reason="hook 'top_k' found no valid row of job 'search'"),
    ],
)  # fmt: skip
TRIALS = OperationProgress(
    operation_id="op-t",
    space_id=SPACE,
    operator="pipeline",
    status="completed",
    parameters={
        "options": {
            "stages": {"evaluate": [{"name": "train", "kind": "operation", "operator": "x"}]},
            "trials": {
                "count": 3,
                "over": {"min_len": {"values": [10, 50]}},
                "objective": {"job": "train", "property": "held_out_loss"},
            },
        }
    },
    jobs=[
        job("trials", "trial-0", trial=0, kind="trial", child_operation_id="op-t-trial-0",
            result={"trial": 0, "values": {"min_len": 10}, "objective": 2.9,
                    "property": "held_out_loss"}),
        job("trials", "trial-1", trial=1, kind="trial", child_operation_id="op-t-trial-1",
            result={"trial": 1, "values": {"min_len": 50}, "objective": 2.4,
                    "property": "held_out_loss"}),
        job("trials", "trial-2", status="optional-failed", trial=2, kind="trial",
            child_operation_id="op-t-trial-2", reason="trial 2: job 'train' gave no value"),
    ],
)  # fmt: skip


def trial_pipeline(number: int) -> OperationProgress:
    name = f"op-t-trial-{number}"
    return OperationProgress(
        operation_id=name,
        operator="pipeline",
        status="completed",
        parent_operation_id="op-t",
        jobs=[
            job("probe", "probe", child_operation_id=f"{name}-probe"),
            job("evaluate", "train", child_operation_id=f"{name}-train"),
        ],
    )


WALK = OperationProgress(operation_id="op-1", operator="random_walk", status="running")
OPERATIONS = {
    "op-p": PIPELINE,
    "op-p-probe_walk": OperationProgress(
        operation_id="op-p-probe_walk", operator="random_walk", status="completed",
        parent_operation_id="op-p",
    ),
    "op-p-search": OperationProgress(
        operation_id="op-p-search", operator="random_walk", status="completed",
        parent_operation_id="op-p",
    ),
    "op-t": TRIALS,
    "op-t-trial-0": trial_pipeline(0),
    "op-t-trial-1": trial_pipeline(1),
    "op-1": WALK,
}  # fmt: skip
RESULTS = {
    "op-p-probe_walk": [
        result("probe", 1, loss(3.0, 1.0, 500.0, raw_len_mean=900.0)),
        result("probe", 2, loss(2.8, 1.0, 520.0, raw_len_mean=900.0)),
        result("probe", 3, {}, valid=False),
    ],
    "op-p-search": [
        result("search", 1, loss(2.6, 0.8, 450.0)),
        result("search", 2, loss(2.7, 0.7, 430.0)),
    ],
    "op-p-recheck": [
        result("recheck", 1, loss(2.5, 0.8, 450.0, tokens_trained=1000, kept_len_mean=600.0))
    ],
    "op-t-trial-0-probe": [result("p0", 1, {"text_length_mean": 500.0})],
    "op-t-trial-0-train": [result("t0", 1, loss(2.9, 0.9, 480.0))],
    "op-t-trial-1-probe": [result("p1", 1, {"text_length_mean": 510.0})],
    "op-t-trial-1-train": [result("t1", 1, loss(2.4, 0.6, 400.0))],
}


def projector(request: httpx.Request) -> httpx.Response:
    """What the projector answers for these operations."""
    path, identifier = request.url.path, request.url.params.get("id")
    if path == "/operations":
        listed = [op.model_dump(mode="json") for op in OPERATIONS.values()]
        return httpx.Response(200, content=json.dumps(listed).encode())
    if path == "/operation" and identifier in OPERATIONS:
        return httpx.Response(200, content=OPERATIONS[identifier].model_dump_json().encode())
    if path == "/operation/results" and identifier in RESULTS:
        answer = [r.model_dump(mode="json") for r in RESULTS[identifier]]
        return httpx.Response(200, content=json.dumps(answer).encode())
    if path == "/operation/results" and identifier in OPERATIONS:
        return httpx.Response(200, content=b"[]")
    return httpx.Response(404, json={"error": f"operation {identifier!r} is not known."})


@pytest.fixture(autouse=True)
def scripted_projector(monkeypatch: pytest.MonkeyPatch) -> None:
    real = discospace.client.Client

    class Scripted(real):  # type: ignore[misc,valid-type]
        def __init__(self, base_url: str | None = None) -> None:
            super().__init__(base_url, transport=httpx.MockTransport(projector))

    monkeypatch.setattr(discospace.client, "Client", Scripted)


@pytest.fixture
def client() -> Iterator[discospace.client.client.Client]:
    transport = httpx.MockTransport(projector)
    with discospace.client.client.Client("http://projector", transport=transport) as made:
        yield made


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def _rows(stdout: str, title: str) -> list[list[str]]:
    """The cells of the table titled `title`."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([cell.strip() for cell in line.strip("│").split("│")])
    return rows


# -- operation show / list -------------------------------------------------------------------


def test_show_lists_a_pipelines_jobs_with_their_child_operations_and_results() -> None:
    result = cli("operation", "show", "op-p")
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout, "Jobs (5)")
    assert [row[:5] for row in rows] == [
        ["probe", "probe_walk", "operation", "completed", "op-p-probe_walk"],
        ["refine", "narrow", "hook", "completed", "-"],
        ["execute", "search", "operation", "completed", "op-p-search"],
        ["evaluate", "recheck", "measure", "completed", "op-p-recheck"],
        ["evaluate", "extra", "hook", "optional-failed", "-"],
    ]
    assert [row[5] for row in rows] == ["3/3", "-", "2/2", "1/1", "-"]
    assert rows[0][6] == "best held_out_loss=2.8"
    assert rows[1][6] == 'narrowed={"min_len": [2, 4]}, space_id=space-aaaaaaaaaaaa'
    assert result.stdout.endswith(
        "job extra (evaluate) optional-failed: hook 'top_k' found no valid row of job 'search'\n"
    )
    assert "jobs" not in [row[0] for row in _rows(result.stdout, "Operation op-p")]


def test_show_json_is_the_projectors_document_with_every_job_and_result() -> None:
    shown = json.loads(cli("operation", "show", "op-p", "--json").stdout)
    assert [j["job"] for j in shown["jobs"]] == [
        "probe_walk",
        "narrow",
        "search",
        "recheck",
        "extra",
    ]
    assert shown["jobs"][1]["result"]["space"]["sample_store"] == "s"


def test_show_lists_each_trial_with_its_recipe_and_objective() -> None:
    rows = _rows(cli("operation", "show", "op-t").stdout, "Jobs (3)")
    assert [row[6] for row in rows] == [
        "held_out_loss=2.9 (min_len=10)",
        "held_out_loss=2.4 (min_len=50)",
        "trial 2: job 'train' gave no value",
    ]


def test_list_narrows_to_the_children_of_one_pipeline_or_to_the_top_level() -> None:
    children = json.loads(cli("operation", "list", "--parent", "op-p", "--json").stdout)
    assert [op["operation_id"] for op in children] == ["op-p-probe_walk", "op-p-search"]
    top = json.loads(cli("operation", "list", "--top-level", "--json").stdout)
    assert [op["operation_id"] for op in top] == ["op-p", "op-t", "op-1"]


def test_list_of_the_children_of_an_unknown_pipeline_is_one_line() -> None:
    result = cli("operation", "list", "--parent", "op-404")
    assert (result.exit_code, result.stderr) == (2, "error: operation 'op-404' is not known.\n")


# -- pipeline compare ------------------------------------------------------------------------


def test_compare_gives_each_targets_statistics_before_and_after(client) -> None:
    comparison = client.pipeline_comparison("op-p")
    assert [t.target for t in comparison.targets] == [
        "held_out_loss",
        "kept_fraction",
        "text_length_mean",
        "raw_len_mean",
    ]  # tokens_trained: evaluated only, nothing to compare it with
    held_out = comparison.targets[0]
    assert (held_out.before.count, held_out.before.mean) == (2, pytest.approx(2.9))
    assert (held_out.before.min, held_out.before.max) == (2.8, 3.0)
    assert held_out.execute is not None
    assert held_out.execute.mean == pytest.approx(2.65)
    assert held_out.evaluate is not None
    assert (held_out.evaluate.count, held_out.evaluate.std) == (1, None)
    assert held_out.change == pytest.approx(2.5 - 2.9)
    assert held_out.relative_change == pytest.approx(-0.4 / 2.9)
    assert set(comparison.stages) == {"probe", "execute", "evaluate"}
    assert comparison.stages["evaluate"]["tokens_trained"].mean == 1000.0


def test_compare_pairs_a_statistic_of_the_raw_data_with_that_of_the_kept_data(client) -> None:
    raw = client.pipeline_comparison("op-p").targets[-1]
    assert (raw.target, raw.after_target, raw.execute) == ("raw_len_mean", "kept_len_mean", None)
    assert (raw.before.mean, raw.evaluate.mean if raw.evaluate else None) == (900.0, 600.0)
    assert raw.change == -300.0
    unpaired = client.pipeline_comparison("op-p", pairs=[("before_", "after_")])
    assert "raw_len_mean" not in [t.target for t in unpaired.targets]


def test_compare_prints_the_paired_names_and_refuses_a_malformed_pair() -> None:
    rows = _rows(cli("pipeline", "compare", "op-p").stdout, "Targets before (probe) and after")
    assert [row[:2] for row in rows[-2:]] == [
        ["raw_len_mean", "probe"],
        ["kept_len_mean", "evaluate"],
    ]
    result = cli("pipeline", "compare", "op-p", "--pair", "raw_")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: --pair takes BEFORE=AFTER (two target-name prefixes), not 'raw_'\n",
    )


def test_compare_sets_the_unrefined_baseline_against_the_best_after_refinement(client) -> None:
    objective = client.pipeline_comparison("op-p").objective
    assert objective is not None
    assert (objective.property, objective.direction) == ("held_out_loss", "min")
    assert objective.baseline_jobs == ["probe_walk"]
    assert objective.baseline is not None
    assert (objective.baseline.value, objective.baseline.job) == (2.8, "probe_walk")
    assert objective.refined is not None
    assert (objective.refined.value, objective.refined.job) == (2.5, "recheck")
    assert objective.refined.entity_values == {"min_len": 1}
    assert (objective.better, objective.change) == (True, pytest.approx(-0.3))


def test_compare_counts_each_jobs_results_and_the_valid_ones(client) -> None:
    jobs = client.pipeline_comparison("op-p").jobs
    assert [(j.job, j.results, j.valid) for j in jobs] == [
        ("probe_walk", 3, 2),
        ("search", 2, 2),
        ("recheck", 1, 1),
    ]
    assert jobs[0].experiments == ["recipe-train"]


def test_compare_prints_the_targets_the_objective_and_the_jobs(client) -> None:
    result = cli("pipeline", "compare", "op-p")
    assert result.exit_code == 0, result.output
    targets = len(client.pipeline_comparison("op-p").targets)  # counted, not the rows
    assert f"Targets before (probe) and after ({targets}) " in result.stdout
    assert targets < len(_rows(result.stdout, "Targets before (probe) and after ("))
    rows = _rows(result.stdout, "Targets before (probe) and after (")
    assert rows[:3] == [
        ["held_out_loss", "probe", "2", "2.9", "0.1414213562", "2.8", "3", "-"],
        ["held_out_loss", "execute", "2", "2.65", "0.07071067812", "2.6", "2.7", "-"],
        ["held_out_loss", "evaluate", "1", "2.5", "-", "2.5", "2.5", "-0.4 (-13.8%)"],
    ]
    assert (
        "held_out_loss (min): baseline 2.8 (probe_walk) -> refined 2.5 (recheck): "
        "-0.3 (-10.7%), better"
    ) in result.stdout
    assert [row[2] for row in _rows(result.stdout, "Jobs measured (3)")] == [
        "probe_walk",
        "search",
        "recheck",
    ]


def test_compare_json_is_the_clients_document(client) -> None:
    result = cli("pipeline", "compare", "op-p", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == client.pipeline_comparison("op-p").model_dump(mode="json")


def test_compare_reads_another_objective_and_baseline_when_asked(client) -> None:
    kept = client.pipeline_comparison("op-p", objective="kept_fraction", direction="max")
    assert kept.objective is not None
    assert (kept.objective.baseline.value, kept.objective.refined.value) == (1.0, 0.8)
    assert kept.objective.better is False
    searched = client.pipeline_comparison("op-p", baseline=["search"])
    assert searched.objective is not None
    assert searched.objective.baseline_jobs == ["search"]
    assert searched.objective.baseline.value == 2.6
    assert searched.objective.refined.job == "recheck"


def test_compare_without_the_objective_in_the_probe_says_what_to_name() -> None:
    result = cli("pipeline", "compare", "op-p", "--objective", "tokens_trained")
    assert result.exit_code == 0, result.output
    assert (
        "tokens_trained (min): the probe stage measured no valid 'tokens_trained': name the "
        "job(s) that measured the unrefined recipe as the baseline"
    ) in result.stdout


def test_compare_over_trials_pools_each_stage_and_names_the_best_trial(client) -> None:
    comparison = client.pipeline_comparison("op-t")
    assert [(j.trial, j.job) for j in comparison.jobs] == [
        (0, "probe"),
        (0, "train"),
        (1, "probe"),
        (1, "train"),
    ]
    assert comparison.stages["probe"]["text_length_mean"].mean == 505.0
    assert comparison.targets[0].target == "text_length_mean"
    assert comparison.targets[0].change == pytest.approx(440.0 - 505.0)
    assert comparison.objective is not None
    assert comparison.objective.refined is not None
    assert (comparison.objective.refined.trial, comparison.objective.refined.value) == (1, 2.4)
    assert comparison.best_trial is not None
    assert (comparison.best_trial.trial, comparison.best_trial.values) == (1, {"min_len": 50})
    # another objective to compare by leaves the best trial the explorer's (it ranked the
    # trials' values in the other objective's direction: the worst trial named "best")
    other = client.pipeline_comparison("op-t", objective="held_out_loss", direction="max")
    assert other.best_trial is not None
    assert other.best_trial.trial == 1


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["op-1"], "error: operation op-1 is not a pipeline (its operator is random_walk).\n"),
        (["op-404"], "error: operation 'op-404' is not known.\n"),
        (
            ["op-p", "--baseline", "probe"],
            "error: pipeline op-p has no job 'probe'; its jobs are: probe_walk, narrow, search, "
            "recheck, extra.\n",
        ),
    ],
)
def test_compare_of_what_is_no_pipeline_or_no_job_is_one_line(args, sentence) -> None:
    result = cli("pipeline", "compare", *args)
    assert (result.exit_code, result.stderr) == (2, sentence)


# -- trials and plot -------------------------------------------------------------------------


def test_trials_list_each_trials_recipe_and_objective(client) -> None:
    result = cli("pipeline", "trials", "op-t", "--json")
    assert result.exit_code == 0, result.output
    trials = json.loads(result.stdout)
    assert [(t["trial"], t["status"], t["objective"]) for t in trials] == [
        (0, "completed", 2.9),
        (1, "completed", 2.4),
        (2, "optional-failed", None),
    ]
    assert trials == [t.model_dump(mode="json") for t in client.pipeline_trials("op-t")]


def test_plot_of_a_pipeline_draws_its_trials_objective_against_the_trial(tmp_path: Path) -> None:
    output = tmp_path / "trials.png"
    result = cli("operation", "plot", "op-t", "-o", str(output))
    assert result.exit_code == 0, result.output
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_trials_whose_objective_cannot_be_read_says_so() -> None:
    """It said "no trial has ended yet" of trials that had all ended."""
    from discospace.cli.errors import CliError
    from discospace.cli.plot import _trials_drawing

    unreadable = TRIALS.model_copy(
        update={"parameters": {**TRIALS.parameters, "options": {}, "objective": None}}
    )
    with pytest.raises(CliError, match="its trials name no objective it can read"):
        _trials_drawing(unreadable)


def test_plot_of_a_pipeline_without_trials_is_one_line(tmp_path: Path) -> None:
    result = cli("operation", "plot", "op-p", "-o", str(tmp_path / "p.png"))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: pipeline op-p has nothing to plot: it has no trials")


# -- watch -----------------------------------------------------------------------------------


def _running(jobs: list[PipelineJob], status: str = "running", **more: Any) -> OperationProgress:
    return PIPELINE.model_copy(
        update={"status": status, "jobs": jobs, "best": None, "stop_detail": "", **more}
    )


def test_watching_a_pipeline_shows_each_job_with_its_own_progress_until_it_ends() -> None:
    probe = PIPELINE.jobs[0]
    searching = job("execute", "search", "running", kind="operation",
                    child_operation_id="op-p-search",
                    child=child("op-p-search", 1, 4, status="running"))  # fmt: skip
    answers = iter(
        [
            None,
            _running([probe, job("execute", "search", "pending")]),
            _running([probe, searching]),
            PIPELINE,
        ]
    )
    out = io.StringIO()
    final = follow(lambda: next(answers), 0.5, Console(file=out, width=200), lambda _: None)
    shown = out.getvalue()
    assert final.status == "completed"
    for text in (
        "probe_walk",
        "3/3",
        "recheck",
        "1/1",
        "optional-failed",
        "best held_out_loss=2.5",
    ):
        assert text in shown
    assert "op-p completed: done 6" in shown


@pytest.mark.parametrize("width", [80, 100])
def test_on_a_narrow_console_a_pipelines_board_cuts_no_figure_short(width: int) -> None:
    """Rich shrank no-wrap columns to fit: 30/30 showed as 30/3, the result column vanished,
    and a file (no terminal) got the board's last line and the final status on one line."""
    probe = job("probe", "probe_walk_long_name", "completed", kind="operation",
                child_operation_id="op-p-probe", child=child("op-p-probe", 30, 30),
                result={"best": {"held_out_loss": 2.345}})  # fmt: skip
    out = io.StringIO()
    follow(lambda: _running([probe], "completed"), 0.5, Console(file=out, width=width), print)
    shown = out.getvalue()
    assert "30/30" in shown
    rows = [line.split("│") for line in shown.splitlines() if line.startswith("│")]
    cells = "".join(row[-2].strip() for row in rows)  # the result, folded where it must be
    assert cells.replace(" ", "") == result_text(probe).replace(" ", "")
    assert all(len(line) <= width for line in shown.splitlines())
    assert shown.endswith("┘\n")  # what is printed next starts on a line of its own


def _running_trial() -> tuple[PipelineJob, OperationProgress]:
    """Trial 1's job while its child pipeline runs, and that child pipeline."""
    inner = child("op-t-trial-1", 1, operator="pipeline", status="running")
    running = job(
        "trials", "trial-1", "running", trial=1, kind="trial",
        child_operation_id="op-t-trial-1", child=inner,
    )  # fmt: skip
    return running, trial_pipeline(1).model_copy(update={"status": "running"})


def test_watching_a_pipeline_shows_the_jobs_of_its_running_trial_below_it() -> None:
    running, inside = _running_trial()
    expanded: list[str] = []

    def expand(operation_id: str) -> OperationProgress:
        expanded.append(operation_id)
        return inside

    answers = iter([TRIALS.model_copy(update={"status": "running", "jobs": [running]}), TRIALS])
    out = io.StringIO()
    follow(lambda: next(answers), 0.5, Console(file=out, width=200), lambda _: None, expand)
    assert expanded == ["op-t-trial-1"]
    assert "held_out_loss=2.4 (min_len=50)" in out.getvalue()


class _AwayError(Exception):
    """Stands for the projector answering 503 for now."""


def test_a_projector_away_while_the_board_reads_a_running_trial_is_polled_through() -> None:
    """The running trial's child pipeline is read while the board is drawn, outside the poll
    that rides out a projector away: one 503 there ended the watch as a failed operation."""
    running, inside = _running_trial()
    expansions = iter([_AwayError("503"), inside])

    def expand(operation_id: str) -> OperationProgress:
        answer = next(expansions)
        if isinstance(answer, Exception):
            raise answer
        return answer

    busy = TRIALS.model_copy(update={"status": "running", "jobs": [running]})
    answers = iter([busy, busy, TRIALS])
    out = io.StringIO()
    final = follow(
        lambda: next(answers), 0.5, Console(file=out, width=200), lambda _: None, expand,
        away=(_AwayError,),
    )  # fmt: skip
    assert final.status == TRIALS.status
    assert "held_out_loss=2.4 (min_len=50)" in out.getvalue()


def test_trials_are_ranked_by_their_objective_even_when_the_pipeline_has_its_own() -> None:
    """As the explorer ranks them: the pipeline's objective (the most tokens per second) would
    name the highest loss the best trial."""
    from discospace.client.pipelines import best_trial, pipeline_objective, trial_points

    own = {"property": "train_tokens_per_second", "direction": "max"}
    progress = TRIALS.model_copy(update={"parameters": {**TRIALS.parameters, "objective": own}})

    best = best_trial(trial_points(progress), pipeline_objective(progress))

    assert best is not None
    assert (best.trial, best.objective) == (1, 2.4)


@pytest.mark.parametrize(
    ("result", "shown"),
    [
        ({"objective": {"property": "loss", "direction": "min"}}, 'objective={"property": "loss"'),
        ({"objective": "loss"}, "objective=loss"),
        ({"objective": 2.5, "property": "loss"}, "loss=2.5"),
    ],
)
def test_a_hook_result_whose_objective_is_no_number_is_shown_as_it_is(result, shown) -> None:
    from discospace.cli.pipeline_views import result_text
    from discospace.client.models import PipelineJob

    job = PipelineJob(job="pick", stage="execute", kind="hook", status="completed", result=result)

    assert result_text(job).startswith(shown)


@pytest.mark.parametrize(
    ("status", "full"),
    [("completed", True), ("failed", True), ("optional-failed", True), ("skipped", False),
     ("cancelled", False), ("pending", False), ("running", False)],
)  # fmt: skip
def test_a_hooks_bar_is_full_only_when_it_ran_to_its_end(status: str, full: bool) -> None:
    """A job that never ran (skipped after the probe failed) was drawn with a full bar, as if
    it had completed."""
    from discospace.cli.watch import _job_done

    done, total = _job_done(job("refine", "prune", status, kind="hook"))
    assert (done == total) is full


def test_compare_counts_one_result_per_pair_the_one_the_store_keeps() -> None:
    """A redelivered attempt completing after its retry came as a second result of the pair:
    it was counted, averaged, and taken as the baseline's best (1.0), where the operation's
    counts, its plot and the store keep the first (3.0)."""
    from discospace.client.pipelines import compare_pipeline

    first = result("op-p-probe_walk", 1, loss(3.0, 0.9, 40.0))
    again = first.model_copy(
        update={"occurred_at": AT + timedelta(minutes=5), "values": loss(1.0, 0.9, 40.0)}
    )
    results = {
        "op-p-probe_walk": [first, result("op-p-probe_walk", 2, loss(3.2, 0.9, 41.0)), again],
        "op-p-search": [result("op-p-search", 3, loss(2.6, 0.8, 50.0))],
    }
    runs = [(None, PIPELINE.jobs)]

    compared = compare_pipeline(PIPELINE, runs, results, baseline=())

    [probe] = [j for j in compared.jobs if j.job == "probe_walk"]
    assert (probe.results, probe.valid) == (2, 2)
    assert probe.statistics["held_out_loss"].mean == pytest.approx(3.1)
    assert compared.objective is not None
    assert compared.objective.baseline.value == 3.0


def test_statistics_of_values_near_the_largest_float_do_not_overflow() -> None:
    """1.5e308 beside 1.6e308: their sum overflowed, a traceback out of `pipeline compare`."""
    from discospace.client.pipelines import TargetStatistics

    stats = TargetStatistics.of([1.5e308, 1.6e308])

    assert stats.mean == pytest.approx(1.55e308)
    assert stats.std == pytest.approx(0.1e308 / 2**0.5)


def test_compare_on_a_property_no_result_holds_says_to_check_its_name() -> None:
    """A misspelt --objective was told 'the probe stage measured no valid ...: name the job(s)
    that measured the unrefined recipe as the baseline'."""
    result = cli("pipeline", "compare", "op-p", "--objective", "held_out_los")

    assert result.exit_code == 0, result.output
    assert "no job's results hold 'held_out_los' (they hold " in result.stdout
    assert "check its name" in result.stdout
    assert "name the job(s)" not in result.stdout
