"""Spaces as the projector shows them (pure): status from their events, and view columns.

A space's status folds its rows: registered wins (the registry's answer is final), else the
latest rejection, else it is still submitted. A view has one column per constitutive property
and one per observed property; an observed column is named by its target when that name is
unambiguous in the space, else by its observed property id `<experiment id>.<target>`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from discospace.core.discovery import DiscoverySpace
from discospace.core.errors import DiscospaceError
from discospace.core.experiment import (
    ExperimentCatalog,
    ParameterizedExperiment,
    observed_property_id,
)
from discospace.core.measurement_space import dependency_order
from discospace.core.space import EntitySpace
from discospace.core.spec import ExperimentSpec, SpaceSpec
from discospace.projector.queries import SpaceRow

ID_COLUMN = "entity_id"
STATUS_COLUMN = "status"
REASON_COLUMN = "reason"
RESERVED_COLUMNS = frozenset({ID_COLUMN, STATUS_COLUMN, REASON_COLUMN})
_STATUS_RANK = {"registered": 2, "rejected": 1, "submitted": 0}


@dataclass(frozen=True)
class SpaceState:
    """What the store knows of one space: its status, spec and catalog entries."""

    key: str
    space_id: str | None
    status: str
    reason: str
    sample_store: str | None
    size: int | None
    submitted_at: datetime | None
    decided_at: datetime | None
    spec: SpaceSpec | None
    experiments: tuple[ExperimentSpec, ...]
    submission_ids: tuple[str, ...]

    @property
    def is_registered(self) -> bool:
        return self.status == "registered"


def space_states(rows: Iterable[SpaceRow]) -> list[SpaceState]:
    """One state per space (or per unidentifiable submission), in order of first sight."""
    by_key: dict[str, list[SpaceRow]] = {}
    for row in rows:
        by_key.setdefault(row.space_key, []).append(row)
    return [space_state(key_rows) for key_rows in by_key.values()]


def space_state(rows: Sequence[SpaceRow]) -> SpaceState:
    """The state of one space from its rows (all with the same key)."""
    decision = max(rows, key=lambda row: (_STATUS_RANK[row.status], row.occurred_at))
    with_spec = [row for row in rows if row.spec]
    source = next((r for r in with_spec if r.status == "registered"), None) or (
        with_spec[-1] if with_spec else None
    )
    submitted = [row.occurred_at for row in rows if row.status == "submitted"]
    spec = SpaceSpec.model_validate_json(source.spec) if source else None
    return SpaceState(
        key=decision.space_key,
        space_id=next((row.space_id for row in rows if row.space_id), None),
        status=decision.status,
        reason=decision.reason,
        sample_store=source.sample_store if source else None,
        size=int(source.size) if source and source.size is not None else None,
        submitted_at=min(submitted) if submitted else None,
        decided_at=decision.occurred_at if decision.status != "submitted" else None,
        spec=spec,
        experiments=_experiments(source.experiments if source else "[]"),
        submission_ids=tuple(dict.fromkeys(row.submission_id for row in rows)),
    )


def _experiments(text: str) -> tuple[ExperimentSpec, ...]:
    return tuple(ExperimentSpec.model_validate(item) for item in json.loads(text))


@dataclass(frozen=True)
class ObservedColumn:
    """One observed property of a space and the column that shows it."""

    name: str
    experiment_id: str
    target: str

    @property
    def observed_id(self) -> str:
        return observed_property_id(self.experiment_id, self.target)


@dataclass(frozen=True)
class SpaceLayout:
    """The columns of a registered space's views, and its entity space for membership."""

    space_id: str
    sample_store: str
    entity_space: EntitySpace
    observed: tuple[ObservedColumn, ...]
    needs: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())
    """(experiment id, the observed property ids it reads) of each dependent experiment, each
    after the experiments it depends on."""

    @classmethod
    def of(cls, state: SpaceState) -> SpaceLayout:
        """The layout of a registered space; raises `DiscospaceError` for an inconsistent one."""
        if state.spec is None or state.space_id is None:
            raise DiscospaceError(f"space {state.key!r} has no registered spec")
        space = DiscoverySpace.from_spec(state.spec)
        resolved = _resolved(state.spec, state.experiments)
        experiment_targets = [(item.id, item.experiment.target_properties) for item in resolved]
        names = set(space.entity_space.names) | RESERVED_COLUMNS
        observed = observed_columns(experiment_targets, names)
        needs = tuple(
            (item.id, item.required_observed)
            for item in dependency_order(resolved)
            if item.is_dependent
        )
        return cls(state.space_id, state.spec.sample_store, space.entity_space, observed, needs)

    @property
    def constitutive(self) -> tuple[str, ...]:
        return self.entity_space.names

    @cached_property
    def experiment_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(column.experiment_id for column in self.observed))

    @property
    def columns(self) -> tuple[str, ...]:
        observed = tuple(column.name for column in self.observed)
        return (ID_COLUMN, *self.constitutive, *observed, STATUS_COLUMN, REASON_COLUMN)


def _resolved(
    spec: SpaceSpec, experiments: Sequence[ExperimentSpec]
) -> list[ParameterizedExperiment]:
    """Each experiment of the measurement space, as registered."""
    catalog = ExperimentCatalog(experiments)
    return [catalog.resolve(ref) for ref in spec.measurement_space]


def observed_columns(
    experiment_targets: Sequence[tuple[str, Sequence[str]]], taken: set[str]
) -> tuple[ObservedColumn, ...]:
    """A column per (experiment, target): the target's name when no other column claims it."""
    counts = Counter(target for _, targets in experiment_targets for target in targets)
    columns = []
    for experiment_id, targets in experiment_targets:
        for target in targets:
            unique = counts[target] == 1 and target not in taken
            name = target if unique else observed_property_id(experiment_id, target)
            columns.append(ObservedColumn(name, experiment_id, target))
    return tuple(columns)
