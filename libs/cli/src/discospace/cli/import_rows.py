"""Rows of a measurements file as measurement events of one space's experiment (pure).

- :class:`ImportTarget`: the space's entity space and sample store, and the experiment the rows
  are measurements of (:func:`import_target` finds it in the registered space by name).
- :func:`map_rows`: each row becomes a :class:`RowResult` (its entity, valid values or an invalid
  reason, how long it ran) or a :class:`RefusedRow` (its number and why, in one sentence). Row
  1 is the first row after the header. A row whose point is not an entity of the space is
  refused, and so is a second row of one entity (the store keeps one result per entity and
  experiment).
- :func:`completed_event`: the ``MeasurementCompleted`` a row becomes, published as an actuator
  would publish it, with the row's provenance (file, SHA-256, row, note, who). Its ids derive
  from the sample store, the entity, the experiment and the file's hash only, so importing the
  same file again gives the very same events, and every consumer drops them as duplicates.
- :func:`split_stored`: the rows the sample store already holds a result for (valid or not:
  the sampler reuses either) are left out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from discospace.cli.errors import CliError
from discospace.cli.import_table import (
    CellError,
    ColumnPlan,
    constitutive_value,
    duration,
    identifier_value,
    is_missing,
    reason,
    target_value,
    validity,
)
from discospace.core.canonical import Value
from discospace.core.discovery import DiscoverySpace
from discospace.core.entity import Entity
from discospace.core.errors import EntityError
from discospace.core.experiment import ExperimentCatalog, ParameterizedExperiment
from discospace.core.space import EntitySpace
from discospace.events import MeasurementCompleted, SpaceRegistered, content_id
from discospace.events import measurement_request_id as request_id_of
from discospace.events.envelope import EVENT_NAMESPACE
from discospace.events.measurements import Provenance

if TYPE_CHECKING:
    import pandas as pd

IMPORT_WORKER_ID = "store-import"
"""``worker_id`` of imported results: no actuator worker ran them (the sampler's own failures
say ``sampler`` the same way)."""
IMPORT_ID_PREFIX = "import-"


@dataclass(frozen=True)
class ImportTarget:
    """Where the rows go: a registered space, its sample store, one of its experiments."""

    space_id: str
    sample_store: str
    entity_space: EntitySpace
    experiment: ParameterizedExperiment

    @property
    def experiment_id(self) -> str:
        return self.experiment.id

    @property
    def targets(self) -> tuple[str, ...]:
        return self.experiment.experiment.target_properties

    @cached_property
    def identifiers(self) -> frozenset[str]:
        """The space's identifier properties (their domain keeps any value as given)."""
        return frozenset(
            prop.name for prop in self.entity_space.properties if prop.domain.kind == "identifier"
        )


@dataclass(frozen=True)
class ImportSource:
    """The file and who imports it: the provenance every imported result carries."""

    name: str
    sha256: str
    note: str
    imported_by: str


@dataclass(frozen=True)
class RowResult:
    """One row read as a measurement of the target's experiment."""

    row: int
    entity: Entity
    is_valid: bool
    values: dict[str, Value]
    invalid_reason: str | None
    duration_seconds: float


@dataclass(frozen=True)
class RefusedRow:
    """A row that cannot be imported; ``reason`` is one sentence starting with the row."""

    row: int
    reason: str


@dataclass(frozen=True)
class MappedRows:
    """Every row of a file, read: the results in file order and the rows refused."""

    results: list[RowResult] = field(default_factory=list)
    refused: list[RefusedRow] = field(default_factory=list)


def import_target(registered: SpaceRegistered, experiment: str | None) -> ImportTarget:
    """The registered space and its experiment named ``experiment`` (by parameterized id, or
    by experiment name when only one parameterization has it; optional in a space with one
    experiment)."""
    space = DiscoverySpace.from_spec(registered.spec)
    measured = space.measurement_space(ExperimentCatalog(registered.experiments))
    chosen = _experiment_named(list(measured), experiment, registered.space_id)
    return ImportTarget(registered.space_id, space.sample_store, space.entity_space, chosen)


def _experiment_named(
    experiments: list[ParameterizedExperiment], name: str | None, space_id: str
) -> ParameterizedExperiment:
    ids = ", ".join(experiment.id for experiment in experiments)
    if name is None:
        if len(experiments) == 1:
            return experiments[0]
        raise CliError(f"space {space_id} measures {ids}: name one with --experiment")
    exact = [e for e in experiments if e.id == name]
    by_name = [e for e in experiments if e.experiment.identifier == name]
    found = exact or by_name
    if len(found) == 1:
        return found[0]
    if found:
        raise CliError(f"--experiment {name} is ambiguous in space {space_id}: give one of {ids}")
    raise CliError(f"space {space_id} has no experiment {name}; its experiments: {ids}")


def map_rows(
    frame: pd.DataFrame,
    plan: ColumnPlan,
    target: ImportTarget,
    on_row: Callable[[int], None] | None = None,
    typed: bool = False,
) -> MappedRows:
    """Every row of ``frame`` as a result or a refusal (see the module docstring);
    ``on_row(number)`` is told of each row read (a progress line)."""
    mapped = MappedRows()
    first_row_of: dict[str, int] = {}
    numeric = numeric_targets(frame, plan, typed)
    for number, cells in enumerate(_rows(frame, plan), start=1):
        if on_row is not None:
            on_row(number)
        try:
            result = _result(number, cells, plan, target, numeric, typed)
        except _RowRefusedError as refusal:
            mapped.refused.append(RefusedRow(number, f"row {number} {refusal}"))
            continue
        first = first_row_of.setdefault(result.entity.id, number)
        if first != number:
            reason = f"row {number} holds the same entity as row {first}"
            mapped.refused.append(RefusedRow(number, reason))
            continue
        mapped.results.append(result)
    return mapped


class _RowRefusedError(Exception):
    """Why a row is refused, as the end of a sentence that starts with ``row N``."""


def _rows(frame: pd.DataFrame, plan: ColumnPlan) -> Iterator[dict[str, Any]]:
    """Each row as column -> cell (plain Python values), reading only the columns planned."""
    wanted = [
        *plan.constitutive.values(),
        *plan.targets.values(),
        *(c for c in (plan.is_valid, plan.invalid_reason, plan.duration) if c is not None),
    ]
    columns = {column: frame[column].tolist() for column in dict.fromkeys(wanted)}
    for index in range(len(frame)):
        yield {column: cells[index] for column, cells in columns.items()}


def numeric_targets(frame: pd.DataFrame, plan: ColumnPlan, typed: bool = False) -> frozenset[str]:
    """The targets whose column holds a number in some row: a text cell there ("1,000", "-")
    is refused, not stored as text that would turn the whole column into text in the views."""
    numeric = set()
    for name, column in plan.targets.items():
        for cell in frame[column].tolist():
            try:
                value = target_value(cell, typed)
            except CellError:
                continue
            if isinstance(value, int | float) and not isinstance(value, bool):
                numeric.add(name)
                break
    return frozenset(numeric)


def _result(
    number: int,
    cells: Mapping[str, Any],
    plan: ColumnPlan,
    target: ImportTarget,
    numeric: frozenset[str] = frozenset(),
    typed: bool = True,
) -> RowResult:
    entity = _entity(cells, plan, target, typed)
    try:
        values = _values(cells, plan, numeric, typed)
        is_valid = validity(cells[plan.is_valid]) if plan.is_valid else None
        why = reason(cells[plan.invalid_reason]) if plan.invalid_reason else None
        seconds = duration(cells[plan.duration]) if plan.duration else 0.0
    except CellError as error:
        raise _RowRefusedError(f"cannot be read: {error}") from None
    if is_valid is None:
        is_valid = why is None
    if is_valid and why is not None:
        raise _RowRefusedError(f"is marked valid but gives the invalid_reason {why!r}")
    if is_valid and not values:
        targets = ", ".join(target.targets)
        raise _RowRefusedError(f"has no value for any target of {target.experiment_id} ({targets})")
    invalid_reason = None if is_valid else why or "recorded as invalid in the imported file"
    return RowResult(number, entity, is_valid, values, invalid_reason, seconds)


def _entity(
    cells: Mapping[str, Any], plan: ColumnPlan, target: ImportTarget, typed: bool = True
) -> Entity:
    """The row's entity; in a file of text cells (CSV), an identifier's value is read as YAML
    reads it (`identifier_value`): its domain, unlike the others, keeps any value as given."""
    point = {}
    for name, column in plan.constitutive.items():
        cell = cells[column]
        if is_missing(cell):
            raise _RowRefusedError(f"has no value for the property {name}")
        value = constitutive_value(cell)
        if not typed and isinstance(value, str) and name in target.identifiers:
            value = identifier_value(value)
        point[name] = value
    try:
        return target.entity_space.normalise(point)
    except EntityError as error:
        raise _RowRefusedError(f"is not an entity of space {target.space_id}: {error}") from None


def _values(
    cells: Mapping[str, Any],
    plan: ColumnPlan,
    numeric: frozenset[str] = frozenset(),
    typed: bool = False,
) -> dict[str, Value]:
    values = {}
    for name, column in plan.targets.items():
        try:
            value = target_value(cells[column], typed)
        except CellError as error:
            raise CellError(f"{name} {error}") from None
        if isinstance(value, str | bool) and name in numeric:
            shown = value if isinstance(value, str) else str(cells[column]).strip()
            raise CellError(f"{name} {shown!r} is not a number, as the column's other cells are")
        if value is not None:
            values[name] = value
    return values


def split_stored(
    results: list[RowResult], stored: Set[str]
) -> tuple[list[RowResult], list[RowResult]]:
    """(rows to import, rows whose entity the store already holds a result for)."""
    new = [result for result in results if result.entity.id not in stored]
    held = [result for result in results if result.entity.id in stored]
    return new, held


def import_id(target: ImportTarget, sha256: str) -> str:
    """The operation id imported results carry: one per sample store, experiment and file."""
    return IMPORT_ID_PREFIX + content_id(target.sample_store, target.experiment_id, sha256)


def imported_event_id(sample_store: str, entity_id: str, experiment_id: str, sha256: str) -> str:
    """The event id of a row's result: the same for the same file, whoever imports it."""
    name = "\x1f".join(("store-import", sample_store, entity_id, experiment_id, sha256))
    return str(uuid.uuid5(EVENT_NAMESPACE, name))


def completed_event(
    result: RowResult, target: ImportTarget, source: ImportSource, now: datetime
) -> MeasurementCompleted:
    """The ``MeasurementCompleted`` that stores one row's result, with its provenance."""
    operation_id = import_id(target, source.sha256)
    entity_id, experiment_id = result.entity.id, target.experiment_id
    return MeasurementCompleted(
        event_id=imported_event_id(target.sample_store, entity_id, experiment_id, source.sha256),
        occurred_at=now,
        operation_id=operation_id,
        request_id=request_id_of(operation_id, entity_id, experiment_id),
        space_id=target.space_id,
        sample_store=target.sample_store,
        entity_id=entity_id,
        entity_values=result.entity.as_dict(),
        experiment_id=experiment_id,
        worker_id=IMPORT_WORKER_ID,
        values=result.values,
        is_valid=result.is_valid,
        invalid_reason=result.invalid_reason,
        uncertainty={},
        duration_seconds=result.duration_seconds,
        provenance=Provenance(
            source=source.name,
            sha256=source.sha256,
            row=result.row,
            note=source.note,
            imported_by=source.imported_by,
        ),
    )
