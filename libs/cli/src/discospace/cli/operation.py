"""``discospace operation ...``: request, list, watch, show and cancel operations.

``create`` and ``cancel`` publish to the operations topic (what any Kafka client may do with
the schemas in ``proto/``); ``list``, ``show`` and ``create --watch`` read the projector's
progress view (a pipeline's: its jobs, their child operations and results).

Only typer and the settings are imported with the module (a help page needs nothing else);
each command imports what it uses (the requests, Kafka, rich, the projector's client).
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from discospace.cli.settings import CliSettings, settings_of

if TYPE_CHECKING:
    from discospace.client import OperationProgress
    from discospace.events import OperationRequested

operation_app = typer.Typer(
    rich_markup_mode=None,
    help="Operations: run an operator on a registered space, follow it, cancel it.",
    no_args_is_help=True,
)

OperationId = Annotated[str, typer.Argument(help="The operation id (op-...).", show_default=False)]
IntervalOption = Annotated[
    float,
    typer.Option("--interval", min=0.05, max=3600, help="Seconds between progress polls."),
]
"""Bounded above too: an infinite or huge interval would stop `time.sleep` with a traceback
(OverflowError) rather than follow anything."""
LIST_COLUMNS = ("operation_id", "space_id", "operator", "status", "done", "best", "requested_at")


@operation_app.command("create")
def create(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Option(
            "--file",
            "-f",
            help="Operation file: space_id, operator, parameters.",
            show_default=False,
        ),
    ],
    space: Annotated[
        str | None, typer.Option("--space", help="The space to run on (overrides the file's).")
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", help="Follow the progress until the operation ends.")
    ] = False,
    interval: IntervalOption = 0.5,
) -> None:
    """Request an operation and print its id; with --watch, show its progress until it ends."""
    from discospace.cli.requests import load_operation_file, operation_request

    settings = settings_of(ctx)
    request = operation_request(settings, load_operation_file(file), space)
    import asyncio

    asyncio.run(_check_and_request(settings, request))
    typer.echo(request.operation_id)
    if watch:
        _follow(settings, request.operation_id, interval)


async def _check_and_request(settings: CliSettings, request: "OperationRequested") -> None:
    """Publish the request only once it passes every check the CLI can make (nothing is
    published otherwise): the space's registration is read from the spaces topic."""
    from discospace.cli.requests import check_request, request_operation
    from discospace.cli.store_import import KafkaStoreLink

    await check_request(request, KafkaStoreLink(settings).registration)
    await request_operation(settings, request)


@operation_app.command("list")
def list_operations(
    ctx: typer.Context,
    space: Annotated[
        str | None, typer.Option("--space", help="Only the operations on this space.")
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status",
            help="Only operations with this status (requested, running, cancelling, completed, "
            "failed); repeat it for several.",
            show_default=False,
        ),
    ] = None,
    parent: Annotated[
        str | None,
        typer.Option("--parent", help="Only the operations this pipeline asked for (its jobs')."),
    ] = None,
    top_level: Annotated[
        bool, typer.Option("--top-level", help="Only the operations no pipeline asked for.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the operations as JSON.")] = False,
) -> None:
    """List the operations, oldest first: space, operator, status, progress and best so far;
    why each failed operation failed below the table."""
    from rich.console import Console

    from discospace.cli.errors import CliError
    from discospace.cli.projector import projector_client
    from discospace.cli.views import print_json, print_line, print_wide, table
    from discospace.cli.watch import ending

    if parent is not None and top_level:
        raise CliError(
            "--parent and --top-level exclude each other: a pipeline's operations are not "
            "top-level; give one of them"
        )
    with projector_client(settings_of(ctx)) as client:
        if parent is not None:
            client.operation(parent)  # an unknown pipeline is one sentence, not an empty list
        found = client.operations(space_id=space, status=status, parent=parent, top_level=top_level)
    if as_json:
        print_json(found)
        return
    console = Console()
    print_wide(table("Operations", [_listed(operation) for operation in found], LIST_COLUMNS))
    for operation in found:
        if operation.status == "failed":
            print_line(console, f"{operation.operation_id} failed: {ending(operation)}")


def _listed(progress: "OperationProgress") -> dict[str, Any]:
    """One operation as a row of ``list``: done as ``done/total``, best as ``property=value``."""
    from discospace.cli.watch import best_text

    best = best_text(progress)
    return progress.model_dump() | {
        "done": f"{progress.done}/{progress.total}" if progress.total else progress.done,
        "best": None if best == "-" else best,
    }


@operation_app.command("show")
def show(
    ctx: typer.Context,
    operation_id: OperationId,
    as_json: Annotated[bool, typer.Option("--json", help="Print the progress as JSON.")] = False,
) -> None:
    """Show an operation's status, counts, best entity so far and why it stopped; a
    pipeline's jobs with their child operations and results."""
    from discospace.cli.pipeline_views import print_jobs
    from discospace.cli.projector import projector_client
    from discospace.cli.views import print_json, print_table
    from discospace.cli.watch import progress_rows

    with projector_client(settings_of(ctx)) as client:
        progress = client.operation(operation_id)
    if as_json:
        print_json(progress)
        return
    print_table(
        f"Operation {operation_id}", progress_rows(progress), ("field", "value"), counted=False
    )
    if progress.is_pipeline:
        print_jobs(progress)


@operation_app.command("watch")
def watch(
    ctx: typer.Context,
    operation_id: OperationId,
    interval: IntervalOption = 0.5,
) -> None:
    """Follow an operation's progress until it ends (exit 2 if it failed)."""
    from discospace.cli.watch import KNOWN_GRACE_S

    _follow(settings_of(ctx), operation_id, interval, KNOWN_GRACE_S)


def _follow(
    settings: CliSettings, operation_id: str, interval: float, unseen_grace_s: float | None = None
) -> None:
    """The live progress bar until the operation ends; a one-line error if it failed."""
    from discospace.cli.errors import CliError
    from discospace.cli.watch import UNSEEN_GRACE_S, ending, watch_operation

    grace = UNSEEN_GRACE_S if unseen_grace_s is None else unseen_grace_s
    final = watch_operation(settings, operation_id, interval, grace)
    if final.status != "completed":
        raise CliError(f"operation {operation_id} failed: {ending(final)}")


@operation_app.command("plot")
def plot(
    ctx: typer.Context,
    operation_id: OperationId,
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Picture to write (.png, .svg or .pdf).", show_default=False
        ),
    ],
) -> None:
    """Draw the best result so far against measurements (two objectives: the Pareto front;
    a pipeline with trials: each trial's objective against its number)."""
    from discospace.cli.plot import plot_operation
    from discospace.cli.projector import projector_client

    with projector_client(settings_of(ctx)) as client:
        typer.echo(str(plot_operation(client, operation_id, output)))


@operation_app.command("cancel")
def cancel(
    ctx: typer.Context,
    operation_id: OperationId,
    reason: Annotated[str, typer.Option("--reason", help="Why, for the record.")] = "",
) -> None:
    """Ask the explorer to stop an operation: it requests nothing more, measurements already
    running finish and land in the sample store, requests still queued are skipped (counted
    failed: "operation cancelled"), and it completes cancelled once all have landed."""
    import asyncio

    from discospace.cli.requests import request_cancel

    asyncio.run(request_cancel(settings_of(ctx), operation_id, reason))
    typer.echo(f"cancel requested for {operation_id}")
