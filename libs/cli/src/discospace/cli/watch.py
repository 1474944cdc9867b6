"""``operation create --watch``: a live progress bar fed by the projector's progress view.

The bar shows done/total (done = measured + reused + failed for good), failed, reused, what
was cancelled (in flight when the operation stopped: neither done nor failed) and the best
value so far; it polls until the operation has ended. An operation the projector has not
seen yet (the request is still on its way) is waited for, not reported as unknown.
"""

import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from discospace.cli.errors import CliError
from discospace.cli.projector import projector_client
from discospace.cli.settings import CliSettings
from discospace.cli.views import plain, print_line

if TYPE_CHECKING:
    from discospace.client import OperationProgress

UNSEEN_GRACE_S = 60.0


def best_text(progress: "OperationProgress") -> str:
    """``property=value`` of the best result so far; else what the operator chose
    (``batch_size=128, power_limit=175``); else ``-``."""
    best, choice = progress.best, progress.choice
    if best is not None:
        return f"{best.property}={best.value:.6g}"
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


def follow(
    fetch: Callable[[], "OperationProgress | None"],
    interval_s: float,
    console: Console,
    sleep: Callable[[float], None] = time.sleep,
) -> "OperationProgress":
    """Poll ``fetch`` (None while the operation is not visible yet) until the operation ends."""
    unseen_s = 0.0
    with _bar(console) as bar:
        task = bar.add_task("waiting", total=None, tally="failed 0  reused 0", best="-")
        while True:
            progress = fetch()
            if progress is None:
                unseen_s += interval_s
                if unseen_s > UNSEEN_GRACE_S:
                    raise CliError(
                        f"the projector has not seen the operation after {UNSEEN_GRACE_S:g}s: "
                        "is it running on the same topics?"
                    )
            else:
                _show(bar, task, progress)
                if progress.ended:
                    return progress
            sleep(interval_s)


def watch_operation(
    settings: CliSettings, operation_id: str, interval_s: float
) -> "OperationProgress":
    """Follow an operation through the projector until it ends; print how it ended."""
    from discospace.client import NotKnownError

    console = Console(stderr=True)
    with projector_client(settings) as client:

        def fetch() -> "OperationProgress | None":
            try:
                return client.operation(operation_id)
            except NotKnownError:
                return None

        final = follow(fetch, interval_s, console)
    print_line(console, f"{operation_id} {final.status}: {ending(final)}")
    return final
