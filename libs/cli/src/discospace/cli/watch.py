"""``operation create --watch``: a live progress bar fed by the projector's progress view.

The bar shows done/total (done = measured + reused + failed for good), failed, reused, what
was cancelled (in flight when the operation stopped: neither done nor failed) and the best
value so far; it polls until the operation has ended. An operation the projector has not
seen yet (the request is still on its way) is waited for, not reported as unknown.

A pipeline is shown as a board of its jobs, stage by stage, each with its own bar (its child
operation's done/total, as for an operation; a hook's is full once it ran to its end, empty
when it was skipped or cancelled), its status and result, and below a running trial the jobs
of its own pipeline; the watch ends with the pipeline's result (how it ended and its best).
"""

import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from discospace.cli.errors import CliError
from discospace.cli.pipeline_views import done_text, result_text, values_text
from discospace.cli.projector import projector_client
from discospace.cli.settings import CliSettings
from discospace.cli.views import number_text, plain, plain_text, print_line

if TYPE_CHECKING:
    from discospace.client import OperationProgress, PipelineJob

UNSEEN_GRACE_S = 60.0
"""How long `operation create --watch` waits for the projector to show the operation it just
requested (its explorer may be starting, replaying the topics)."""
AWAY_GRACE_S = 60.0
"""How long a watch rides out a projector that does not answer or cannot read its store (a
restart, a store briefly away) before it gives up: once, it ended the watch with the exit code
of a failed operation while the operation ran on."""
KNOWN_GRACE_S = 5.0
"""How long `operation watch` waits for an operation the projector does not know: one just
requested by another command may not be projected yet, a mistyped id never will be."""
Expand = Callable[[str], "OperationProgress | None"]
"""Reads another operation's progress (a running trial's child pipeline)."""


def best_text(progress: "OperationProgress") -> str:
    """``property=value`` of the best result so far; else what the operator chose
    (``batch_size=128, power_limit=175``); else ``-``."""
    best, choice = progress.best, progress.choice
    if best is not None:
        return f"{best.property}={number_text(best.value)}"
    if choice is not None and choice.values:
        return ", ".join(f"{name}={value}" for name, value in choice.values.items())
    return "-"


def ending(progress: "OperationProgress") -> str:
    """How the operation ended (or why it is where it is), in one sentence."""
    return (
        progress.stop_detail or progress.failure_reason or progress.stop_reason or progress.status
    )


def progress_rows(progress: "OperationProgress") -> list[dict[str, Any]]:
    """``show``'s table: one (field, value) row per fact, counts, best and choice spelled out."""
    data = plain(progress)
    counts = data.pop("counts", None) or {}
    best = data.pop("best", None) or {}
    data.pop("choice", None)
    data.pop("jobs", None)  # a pipeline's jobs: a table of their own
    rows = [{"field": key, "value": value} for key, value in data.items()]
    rows += [{"field": f"counts.{key}", "value": value} for key, value in counts.items()]
    rows += [{"field": f"best.{key}", "value": value} for key, value in best.items()]
    return rows + [{"field": f"choice.{key}", "value": v} for key, v in choice_facts(progress)]


def choice_facts(progress: "OperationProgress") -> list[tuple[str, Any]]:
    """What the operator chose, its expected cost, the cost so far and how many recurrences
    in which phase (the costs of each are for ``operation plot``)."""
    choice = progress.choice
    if choice is None:
        return []
    phases = Counter(choice.recurrence_phases)
    split = ", ".join(f"{count} {phase}" for phase, count in phases.items())
    recurrences = f"{len(choice.recurrence_costs)}" + (f" ({split})" if split else "")
    return [
        *choice.values.items(),
        ("expected_cost", choice.expected_cost),
        ("cost_so_far", choice.cost_so_far),
        ("recurrences", recurrences),
    ]


def _bar(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TextColumn("best {task.fields[best]}"),
        TimeElapsedColumn(),
        console=console,
    )


def _show(bar: Progress, task: Any, progress: "OperationProgress") -> None:
    total = progress.total or max(progress.counts.requested, progress.done)
    bar.update(
        task,
        description=escape(progress.status),
        completed=progress.done,
        total=total or None,
        tally=tally_text(progress),
        best=escape(best_text(progress)),
    )


def tally_text(progress: "OperationProgress") -> str:
    """``failed F  reused R``, and ``  cancelled C`` once some were."""
    counts = progress.counts
    tally = f"failed {counts.failed}  reused {counts.reused}"
    return tally + (f"  cancelled {counts.cancelled}" if counts.cancelled else "")


class _OperationBar:
    """One operation's progress bar."""

    def __init__(self, console: Console) -> None:
        self.bar = _bar(console)
        self.task = self.bar.add_task("waiting", total=None, tally="failed 0  reused 0", best="-")

    def start(self) -> None:
        self.bar.start()

    def stop(self) -> None:
        self.bar.stop()

    def show(self, progress: "OperationProgress") -> None:
        _show(self.bar, self.task, progress)


class _PipelineBoard:
    """A pipeline's jobs, each with its own bar (its child's done/total), redrawn each poll;
    a running trial's own jobs below it (read through ``expand``)."""

    def __init__(self, console: Console, expand: Expand | None) -> None:
        self.expand = expand
        self.live = Live(console=console, auto_refresh=False)

    def start(self) -> None:
        self.live.start()

    def stop(self) -> None:
        self.live.stop()
        if not self.live.console.is_terminal:  # Live ends its last board with no newline there
            self.live.console.line()

    def show(self, progress: "OperationProgress") -> None:
        self.live.update(self.render(progress), refresh=True)

    def render(self, progress: "OperationProgress") -> Table:
        title = (
            f"{progress.operation_id} {progress.status}: done {progress.done}  "
            f"{tally_text(progress)}  best {best_text(progress)}"
        )
        board = Table(title=plain_text(title), title_justify="left")
        rows: list[tuple[PipelineJob, str]] = []
        for job in progress.jobs:
            rows.append((job, ""))
            rows.extend((sub, "  ") for sub in self.inside(job))
        done = max((len(done_text(job)) for job, _ in rows), default=4)
        # on a narrow terminal the bar gives way and names fold: no figure is ever cut short
        for name in ("stage", "job", "status", "progress", "done", "result"):
            board.add_column(
                Text(name),
                no_wrap=name in ("stage", "status", "done"),
                overflow="fold",
                min_width={"done": max(done, 4), "result": 12, "progress": 6}.get(name),
                max_width=24 if name == "progress" else None,
                ratio=1 if name == "progress" else None,
            )
        for job, indent in rows:
            _add_job(board, job, indent)
        return board

    def inside(self, job: "PipelineJob") -> list["PipelineJob"]:
        """The jobs of a running trial's child pipeline (none for any other job)."""
        child = job.child
        if self.expand is None or child is None or child.operator != "pipeline":
            return []
        if job.status != "running":
            return []
        found = self.expand(child.operation_id)
        return list(found.jobs) if found is not None else []


def _add_job(board: Table, job: "PipelineJob", indent: str = "") -> None:
    done, total = _job_done(job)
    board.add_row(
        plain_text(job.stage),
        plain_text(indent + job.job),
        plain_text(job.status),
        ProgressBar(total=total, completed=done, width=None),
        Text(done_text(job)),
        plain_text(result_text(job)),
    )


def _job_done(job: "PipelineJob") -> tuple[float, float | None]:
    """(done, total) of the job's bar: its child's (done/requested without a total; pulsing
    before anything was requested), else 1 of 1 once the job ran to its end (completed or
    failed), 0 of 1 when it never ran or was stopped (skipped, cancelled)."""
    child = job.child
    if child is None:
        return (1.0 if job.status in ("completed", "failed", "optional-failed") else 0.0), 1.0
    total = child.total if child.total is not None else child.counts.requested
    return float(child.done), (float(total) if total else None)


def follow(
    fetch: Callable[[], "OperationProgress | None"],
    interval_s: float,
    console: Console,
    sleep: Callable[[float], None] = time.sleep,
    expand: Expand | None = None,
    unseen_grace_s: float = UNSEEN_GRACE_S,
    away: tuple[type[Exception], ...] = (),
    away_grace_s: float = AWAY_GRACE_S,
    clock: Callable[[], float] = time.monotonic,
) -> "OperationProgress":
    """Poll ``fetch`` (None while the operation is not visible yet) until the operation ends:
    one bar for an operation, a board of its jobs for a pipeline (``expand`` reads a running
    trial's child pipeline). An operation not visible for ``unseen_grace_s`` is an error; an
    error of the kinds ``away`` (the projector for now unavailable) is polled through for up to
    ``away_grace_s`` in a row, then raised. A grace counts the time the polls took as well as
    the pauses between them (a projector that never answers costs each poll the client's
    timeout: counting the pauses alone, a 60 s grace lasted an hour)."""
    unseen_s = away_s = 0.0
    display: _OperationBar | _PipelineBoard | None = None
    try:
        while True:
            asked = clock()
            try:  # the board reads a running trial's child pipeline too: away the same
                progress = fetch()
                if progress is not None:
                    if display is None:
                        display = (
                            _PipelineBoard(console, expand)
                            if progress.is_pipeline
                            else _OperationBar(console)
                        )
                        display.start()
                    display.show(progress)
            except away:
                away_s += clock() - asked
                if away_s >= away_grace_s:
                    raise
                away_s += _pause(sleep, interval_s, away_grace_s - away_s)
                continue
            away_s = 0.0
            if progress is None:
                unseen_s += clock() - asked
                if unseen_s >= unseen_grace_s:
                    raise CliError(
                        f"the projector has not seen the operation after {unseen_grace_s:g}s: "
                        "is the id right, and is it running on the same topics?"
                    )
                unseen_s += _pause(sleep, interval_s, unseen_grace_s - unseen_s)
                continue
            if progress.ended:
                return progress
            sleep(interval_s)
    finally:
        if display is not None:
            display.stop()


def _pause(sleep: Callable[[float], None], interval_s: float, left_s: float) -> float:
    """Sleep until the next poll, never past the end of a grace (`left_s`): an interval longer
    than the grace gave up at the first miss, saying it had waited the grace; the seconds
    slept."""
    seconds = min(interval_s, left_s)
    sleep(seconds)
    return seconds


def watch_operation(
    settings: CliSettings,
    operation_id: str,
    interval_s: float,
    unseen_grace_s: float = UNSEEN_GRACE_S,
) -> "OperationProgress":
    """Follow an operation through the projector until it ends; print how it ended (a
    pipeline: with its jobs' results and its best)."""
    from discospace.client import NotKnownError, ProjectorUnavailableError

    console = Console(stderr=True)
    with projector_client(settings) as client:

        def fetch(wanted: str = operation_id) -> "OperationProgress | None":
            try:
                return client.operation(wanted)
            except NotKnownError:
                return None

        final = follow(
            fetch,
            interval_s,
            console,
            expand=fetch,
            unseen_grace_s=unseen_grace_s,
            away=(ProjectorUnavailableError,),
        )
    print_line(console, f"{operation_id} {final.status}: {ending(final)}")
    if final.is_pipeline and final.best is not None:
        print_line(console, f"best {best_text(final)}: {values_text(final.best.entity_values)}")
    return final
