"""``discospace space ...``: commands about discovery spaces.

``describe`` works offline: it reads a space file and prints its size, properties and
experiments without any service running; each experiment's target properties come from
``--catalog FILE``, else from the projector's catalogs when it answers. ``create`` submits a
space file to the registry through Kafka; ``get`` and ``show`` read the projector's views (see
``space_views.py``).
"""

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from discospace.cli.description import Catalog, print_description, registry_problems, summary
from discospace.cli.errors import CliError
from discospace.cli.projector import projector_catalog
from discospace.cli.requests import submit_space
from discospace.cli.settings import CliSettings, settings_of
from discospace.cli.space_plot import plot
from discospace.cli.space_views import get, list_spaces, show
from discospace.core.experiment import ExperimentCatalog
from discospace.core.loading import (
    discovery_space_from_spec,
    load_discovery_space,
    load_experiment_specs,
    load_space_spec,
)
from discospace.core.urls import redacted_url
from discospace.events import SpaceRejected

space_app = typer.Typer(
    rich_markup_mode=None,
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
    ctx: typer.Context,
    file: FileOption,
    catalog_file: Annotated[
        Path | None,
        typer.Option(
            "--catalog",
            help="Experiments file (YAML or JSON list) that gives each experiment's target "
            "properties; by default the projector's catalogs, when it answers.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the description as JSON.")] = False,
) -> None:
    """Describe a space file offline: entities, properties, experiments and their targets.

    Exits 2, after the description, when the registry would reject the space: it names no
    experiment, or (with a catalog) an experiment is unknown or needs a property the space lacks.
    """
    space = load_discovery_space(file)
    catalog = _catalog(settings_of(ctx), catalog_file)
    if as_json:
        typer.echo(json.dumps(summary(space, catalog), indent=2))
    else:
        print_description(space, Console(), catalog)
    problems = registry_problems(space, catalog)
    if problems:
        raise CliError(f"{file}: the registry would reject this space: {'; '.join(problems)}")


def _catalog(settings: CliSettings, file: Path | None) -> Catalog:
    """The catalog file's experiments, else the projector's, else none and why."""
    if file is not None:
        return Catalog(ExperimentCatalog(load_experiment_specs(file)), str(file))
    found = projector_catalog(settings)
    if isinstance(found, str):
        return Catalog(None, f"{found}; give --catalog FILE, a list of experiments")
    return Catalog(found, f"the projector at {redacted_url(settings.projector_url)}")


@space_app.command("create")
def create(ctx: typer.Context, file: FileOption, timeout: TimeoutOption = 30.0) -> None:
    """Submit a space file to the registry and print the space id it registers.

    A rejected space prints the registry's reason and exits non-zero.
    """
    spec = load_space_spec(file)
    space = discovery_space_from_spec(spec, str(file))
    problems = space.shape_problems()
    if problems:  # nothing a registry could accept: not published
        raise CliError(f"{file}: {'; '.join(problems)}")
    answer = asyncio.run(submit_space(settings_of(ctx), spec, space.id, timeout))
    if isinstance(answer, SpaceRejected):
        raise CliError(f"the registry rejected {file}: {answer.reason}")
    typer.echo(answer.space_id)


space_app.command("get")(get)
space_app.command("list")(list_spaces)
space_app.command("show")(show)
space_app.command("plot")(plot)
