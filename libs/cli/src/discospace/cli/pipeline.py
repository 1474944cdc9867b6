"""``discospace pipeline ...``: what a pipeline's stages found, read from the projector's views.

``compare`` is the sandbox's before-and-after: the statistics of each target the probe stage
measured and the execute or evaluate stage measured too, and the objective of the unrefined
baseline against the best after refinement (``discospace.client.pipelines`` has the rules).
``trials`` lists a pipeline's trials with their recipe values and objective. Both print the
client's document with ``--json`` (``Client.pipeline_comparison``, ``Client.pipeline_trials``).
"""

from typing import Annotated, Literal

import typer

from discospace.cli.errors import CliError
from discospace.cli.pipeline_views import TRIAL_COLUMNS, print_comparison, trial_rows
from discospace.cli.projector import projector_client
from discospace.cli.settings import settings_of
from discospace.cli.views import print_json, print_wide, table

pipeline_app = typer.Typer(
    rich_markup_mode=None,
    help="Pipelines: compare before and after refinement, list trials.",
    no_args_is_help=True,
)

PipelineId = Annotated[
    str, typer.Argument(help="The pipeline's operation id (op-...).", show_default=False)
]


@pipeline_app.command("compare")
def compare(
    ctx: typer.Context,
    operation_id: PipelineId,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            help="A job that measured the unrefined baseline (default: the probe stage's "
            "jobs); repeat it for several.",
            show_default=False,
        ),
    ] = None,
    objective: Annotated[
        str | None,
        typer.Option(
            "--objective",
            help="The property to compare (default: its trials' objective, else the pipeline's).",
            show_default=False,
        ),
    ] = None,
    direction: Annotated[
        Literal["min", "max"] | None,
        typer.Option(
            "--direction",
            help="Whether smaller or larger --objective is better (default: the pipeline's "
            "objective's when the same property, else min).",
            show_default=False,
        ),
    ] = None,
    pair: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            help="BEFORE=AFTER: a target named BEFORE<x> before compares with AFTER<x> after "
            "(default raw_=kept_); repeat it for several.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare before (probe) and after (execute, evaluate): each target's statistics, and the
    objective of the unrefined baseline against the best after refinement."""
    from discospace.client.pipelines import DEFAULT_PAIRS

    pairs = [prefix_pair(text) for text in pair] if pair else DEFAULT_PAIRS
    with projector_client(settings_of(ctx)) as client:
        comparison = client.pipeline_comparison(
            operation_id,
            baseline=baseline or (),
            objective=objective,
            direction=direction,
            pairs=pairs,
        )
    if as_json:
        print_json(comparison)
        return
    print_comparison(comparison)


def prefix_pair(text: str) -> tuple[str, str]:
    """``raw_=kept_`` as ``("raw_", "kept_")``; a `CliError` for anything else."""
    before, sign, after = text.partition("=")
    if not sign or not before or not after:
        raise CliError(f"--pair takes BEFORE=AFTER (two target-name prefixes), not {text!r}")
    return before, after


@pipeline_app.command("trials")
def trials(
    ctx: typer.Context,
    operation_id: PipelineId,
    as_json: Annotated[bool, typer.Option("--json", help="Print the trials as JSON.")] = False,
) -> None:
    """List a pipeline's trials: status, recipe values and objective value."""
    with projector_client(settings_of(ctx)) as client:
        found = client.pipeline_trials(operation_id)
    if as_json:
        print_json(found)
        return
    print_wide(table("Trials", trial_rows(found), TRIAL_COLUMNS))
