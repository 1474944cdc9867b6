"""``discospace actuators``: the actuators the projector has seen, their pools and catalogs."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from discospace.cli.projector import projector_client
from discospace.cli.settings import settings_of
from discospace.cli.views import print_json, print_table

if TYPE_CHECKING:
    from discospace.client import ActuatorPool

COLUMNS = ("actuator", "pool", "gpu_model", "experiments", "workers")


def _row(pool: "ActuatorPool") -> dict[str, Any]:
    return {
        "actuator": pool.actuator,
        "pool": pool.pool,
        "gpu_model": pool.gpu_model,
        "experiments": [experiment.experiment for experiment in pool.experiments],
        "workers": pool.workers,
    }


def actuators(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalogs as JSON.")] = False,
) -> None:
    """List the actuators, the pools they serve and the experiments they offer."""
    with projector_client(settings_of(ctx)) as client:
        found = client.actuators()
    if as_json:
        print_json(found)
        return
    print_table("Actuators", [_row(pool) for pool in found], COLUMNS)
