"""Describing a discovery space to a person: size, properties by kind, experiments.

Shared by ``space describe`` (a file, offline) and ``space get SPACE_ID`` (a registered space).
Discrete properties show their values, or their range and interval. Each experiment shows its
target, required and optional properties when a :class:`Catalog` knows it: the registry's
(a registered space), a catalog file or the projector's (a space file); otherwise ``?`` and one
line saying why.
"""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table

from discospace.cli.views import plain_text, print_line
from discospace.core.canonical import format_value
from discospace.core.discovery import DiscoverySpace
from discospace.core.errors import DiscospaceError
from discospace.core.experiment import ExperimentCatalog
from discospace.core.properties import ConstitutiveProperty
from discospace.core.space import EntitySpace
from discospace.core.spec import ExperimentRef

KINDS = ("categorical", "discrete", "continuous", "identifier")
UNKNOWN = "?"


@dataclass(frozen=True)
class Catalog:
    """The experiments that tell each experiment's properties, and where they come from
    (``source``), or why there are none (``experiments`` is None)."""

    experiments: ExperimentCatalog | None
    source: str

    @property
    def note(self) -> str:
        if self.experiments is None:
            return f"target properties: unknown ({self.source})"
        return f"target properties from {self.source}"


def _of_kind(space: EntitySpace, kind: str) -> list[ConstitutiveProperty]:
    return [p for p in space.properties if p.domain.kind == kind]


def _size_text(size: int | float) -> str:
    return "infinitely many" if math.isinf(size) else f"{size:,}"


def property_facts(prop: ConstitutiveProperty) -> dict[str, object]:
    """A property as data: its domain in words, and its values or its range and interval."""
    domain = prop.domain
    return {
        "name": prop.name,
        "type": domain.kind,
        "domain": domain.describe(),
        "values": list(domain.explicit_values) if domain.explicit_values is not None else None,
        "range": [domain.low, domain.high] if domain.low is not None else None,
        "interval": domain.interval,
        "size": domain.size if domain.is_finite else None,
    }


def experiment_facts(ref: ExperimentRef, catalog: Catalog) -> dict[str, Any]:
    """An experiment of the measurement space with what the catalog says of it (None: unknown;
    ``problem`` says why a catalog could not resolve it)."""
    facts: dict[str, Any] = {
        "actuator": ref.actuator,
        "experiment": ref.experiment,
        "parameterization": dict(ref.parameterization),
        "experiment_id": None,
        "target_properties": None,
        "required_properties": None,
        "optional_properties": None,
        "problem": None,
    }
    if catalog.experiments is None:
        return facts
    try:
        resolved = catalog.experiments.resolve(ref)
    except DiscospaceError as error:
        return facts | {"problem": str(error)}
    return facts | {
        "experiment_id": resolved.id,
        "target_properties": list(resolved.experiment.target_properties),
        "required_properties": list(resolved.experiment.required_properties),
        "optional_properties": resolved.option_values,
    }


def summary(space: DiscoverySpace, catalog: Catalog) -> dict[str, object]:
    """What ``describe`` shows, as data (the ``--json`` output)."""
    entity_space = space.entity_space
    size = entity_space.size
    return {
        "id": space.id,
        "sample_store": space.sample_store,
        "entities": size if entity_space.is_finite else None,
        "property_counts": {kind: len(_of_kind(entity_space, kind)) for kind in KINDS},
        "properties": [property_facts(p) for p in entity_space.properties],
        "catalog": catalog.source if catalog.experiments is not None else None,
        "experiments": [experiment_facts(ref, catalog) for ref in space.experiments],
        "problems": registry_problems(space, catalog),
    }


def registry_problems(space: DiscoverySpace, catalog: Catalog) -> list[str]:
    """Why the registry would reject `space`: what `catalog` tells (an unknown experiment, a
    property an experiment needs and the space lacks), or its shape alone when there is no
    catalog to check its experiments against (no experiment at all)."""
    if catalog.experiments is None:
        return space.shape_problems()
    return space.problems(catalog.experiments)


def _table(title: str, *columns: str) -> Table:
    """A table whose cells are ``Text``: ``[a, b]`` is never read as markup."""
    table = Table(title=plain_text(title), title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold", style="bold" if column == columns[0] else "")
    return table


def _count(prop: ConstitutiveProperty) -> str:
    return _size_text(prop.domain.size) if prop.domain.is_finite else prop.domain.kind


def _properties_table(title: str, props: list[ConstitutiveProperty], column: str) -> Table:
    table = _table(f"{title} properties ({len(props)})", "property", column, "count")
    table.columns[2].justify = "right"
    for prop in props:
        table.add_row(
            plain_text(prop.name), plain_text(prop.domain.describe()), plain_text(_count(prop))
        )
    return table


def _discrete_table(props: list[ConstitutiveProperty]) -> Table:
    """Values, or range (high excluded) and interval, each in its own column."""
    columns = ("property", "values", "range", "interval", "count")
    table = _table(f"Discrete properties ({len(props)})", *columns)
    table.columns[4].justify = "right"
    for prop in props:
        domain = prop.domain
        ranged = domain.is_range
        table.add_row(
            plain_text(prop.name),
            plain_text("-" if ranged else domain.describe()),
            plain_text(f"[{domain.low}, {domain.high})" if ranged else "-"),
            plain_text(str(domain.interval) if ranged else "-"),
            plain_text(_count(prop)),
        )
    return table


def _listed(items: Iterable[object]) -> str:
    return ", ".join(str(item) for item in items) or "-"


def _pairs(values: Mapping[str, Any]) -> str:
    return _listed(f"{name}={format_value(value)}" for name, value in sorted(values.items()))


def _experiment_lines(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) lines of one experiment; ``?`` (and the problem) without its catalog entry."""
    lines = []
    if facts["parameterization"]:
        lines.append(("parameterization", _pairs(facts["parameterization"])))
    if facts["target_properties"] is None:
        lines.append(("target properties", UNKNOWN))
        return lines + ([("problem", facts["problem"])] if facts["problem"] else [])
    return [
        *lines,
        ("target properties", _listed(facts["target_properties"])),
        ("required properties", _listed(facts["required_properties"])),
        ("optional properties", _pairs(facts["optional_properties"])),
    ]


def _experiment(facts: dict[str, Any]) -> Padding:
    """One experiment: its facts as an indented grid whose values wrap between items."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for label, value in _experiment_lines(facts):
        grid.add_row(plain_text(label), plain_text(value))
    return Padding(grid, (0, 0, 0, 4), expand=False)


def _print_experiments(space: DiscoverySpace, catalog: Catalog, console: Console) -> None:
    """Each experiment by name, then what it measures and needs (from the catalog)."""
    print_line(console, f"Experiments ({len(space.experiments)})")
    for ref in space.experiments:
        print_line(console, f"  {ref.actuator}: {ref.experiment}")
        console.print(_experiment(experiment_facts(ref, catalog)))
    if space.experiments:
        print_line(console, catalog.note)


def print_description(space: DiscoverySpace, console: Console, catalog: Catalog) -> None:
    entity_space = space.entity_space
    counts = {kind: len(_of_kind(entity_space, kind)) for kind in KINDS}
    print_line(console, f"Space {space.id} (sample store {space.sample_store})")
    print_line(
        console,
        f"{_size_text(entity_space.size)} entities; "
        + ", ".join(f"{n} {kind}" for kind, n in counts.items())
        + " properties",
    )
    categorical = _of_kind(entity_space, "categorical")
    if categorical:
        console.print(_properties_table("Categorical", categorical, "values"))
    discrete = _of_kind(entity_space, "discrete")
    if discrete:
        console.print(_discrete_table(discrete))
    others = _of_kind(entity_space, "continuous") + _of_kind(entity_space, "identifier")
    if others:
        console.print(_properties_table("Continuous and identifier", others, "range"))
    _print_experiments(space, catalog, console)
