"""``discospace space ...``: commands about discovery spaces.

``describe`` works offline: it reads a space file and prints its size, properties and
experiments without any service running. ``create`` submits a space file to the registry
through Kafka; ``get`` and ``show`` read the projector's views (see ``space_views.py``).
"""

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from discospace.cli.description import print_description, summary
from discospace.cli.errors import CliError
from discospace.cli.requests import submit_space
from discospace.cli.settings import settings_of
from discospace.cli.space_plot import plot
from discospace.cli.space_views import get, show
from discospace.core.loading import discovery_space_from_spec, load_discovery_space, load_space_spec
from discospace.events import SpaceRejected

space_app = typer.Typer(
    help="Discovery spaces: describe a space file, register it, list spaces, show entities.",
    no_args_is_help=True,
)

FileOption = Annotated[
    Path, typer.Option("--file", "-f", help="Space file (YAML or JSON).", show_default=False)
]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", min=0.1, help="Seconds to wait for the registry's answer.")
]


@space_app.command("describe")
def describe(
    file: FileOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print the description as JSON.")] = False,
) -> None:
    """Describe a space file offline: entities, properties and experiments."""
    space = load_discovery_space(file)
    if as_json:
        typer.echo(json.dumps(summary(space), indent=2))
        return
    print_description(space, Console())


@space_app.command("create")
def create(ctx: typer.Context, file: FileOption, timeout: TimeoutOption = 30.0) -> None:
    """Submit a space file to the registry and print the space id it registers.

    A rejected space prints the registry's reason and exits non-zero.
    """
    spec = load_space_spec(file)
    space = discovery_space_from_spec(spec, str(file))
    answer = asyncio.run(submit_space(settings_of(ctx), spec, space.id, timeout))
    if isinstance(answer, SpaceRejected):
        raise CliError(f"the registry rejected {file}: {answer.reason}")
    typer.echo(answer.space_id)


space_app.command("get")(get)
space_app.command("show")(show)
space_app.command("plot")(plot)
