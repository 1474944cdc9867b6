"""Describing a discovery space to a person: size, properties by kind, experiments.

Shared by ``space describe`` (a file, offline) and ``space get SPACE_ID`` (a registered space).
"""

import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from discospace.cli.views import print_line
from discospace.core.discovery import DiscoverySpace
from discospace.core.properties import ConstitutiveProperty
from discospace.core.space import EntitySpace

KINDS = ("categorical", "discrete", "continuous", "identifier")


def _of_kind(space: EntitySpace, kind: str) -> list[ConstitutiveProperty]:
    return [p for p in space.properties if p.domain.kind == kind]


def _size_text(size: int | float) -> str:
    return "infinitely many" if math.isinf(size) else f"{size:,}"


def summary(space: DiscoverySpace) -> dict[str, object]:
    """What ``describe`` shows, as data (the ``--json`` output)."""
    entity_space = space.entity_space
    size = entity_space.size
    return {
        "id": space.id,
        "sample_store": space.sample_store,
        "entities": size if entity_space.is_finite else None,
        "property_counts": {kind: len(_of_kind(entity_space, kind)) for kind in KINDS},
        "properties": [
            {
                "name": p.name,
                "type": p.domain.kind,
                "domain": p.domain.describe(),
                "size": p.domain.size if p.domain.is_finite else None,
            }
            for p in entity_space.properties
        ],
        "experiments": [
            {
                "actuator": ref.actuator,
                "experiment": ref.experiment,
                "parameterization": ref.parameterization,
            }
            for ref in space.experiments
        ],
    }


def _properties_table(title: str, props: list[ConstitutiveProperty], column: str) -> Table:
    """One row per property; cells are ``Text`` so that ``[a, b]`` is not read as markup."""
    table = Table(title=f"{title} properties ({len(props)})", title_justify="left")
    table.add_column("property", style="bold")
    table.add_column(column, overflow="fold")
    table.add_column("count", justify="right")
    for prop in props:
        count = _size_text(prop.domain.size) if prop.domain.is_finite else prop.domain.kind
        table.add_row(Text(prop.name), Text(prop.domain.describe()), Text(count))
    return table


def _experiments_table(space: DiscoverySpace) -> Table:
    """The parameterization column appears only when some experiment has one."""
    table = Table(title=f"Experiments ({len(space.experiments)})", title_justify="left")
    table.add_column("actuator", style="bold")
    table.add_column("experiment", overflow="fold")
    parameterized = any(ref.parameterization for ref in space.experiments)
    if parameterized:
        table.add_column("parameterization", overflow="fold")
    for ref in space.experiments:
        cells = [Text(ref.actuator), Text(ref.experiment)]
        if parameterized:
            pairs = sorted(ref.parameterization.items())
            cells.append(Text(", ".join(f"{k}={v}" for k, v in pairs) or "-"))
        table.add_row(*cells)
    return table


def print_description(space: DiscoverySpace, console: Console) -> None:
    entity_space = space.entity_space
    counts = {kind: len(_of_kind(entity_space, kind)) for kind in KINDS}
    print_line(console, f"Space {space.id} (sample store {space.sample_store})")
    print_line(
        console,
        f"{_size_text(entity_space.size)} entities; "
        + ", ".join(f"{n} {kind}" for kind, n in counts.items())
        + " properties",
    )
    console.print(_properties_table("Categorical", _of_kind(entity_space, "categorical"), "values"))
    console.print(
        _properties_table("Discrete", _of_kind(entity_space, "discrete"), "values or range")
    )
    others = _of_kind(entity_space, "continuous") + _of_kind(entity_space, "identifier")
    if others:
        console.print(_properties_table("Continuous and identifier", others, "range"))
    console.print(_experiments_table(space))
