"""The registered spaces the explorer runs operations on, folded from `SpaceRegistered`.

An operation names its space by id; the explorer needs the entity space (its size, to sample
it) and the measurement space resolved against the catalog the registry recorded (which
experiments depend on which). A registration the explorer cannot use is kept as a reason, so
an operation on it fails with that sentence instead of waiting forever.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeAlias

from discospace.core import (
    DiscospaceError,
    DiscoverySpace,
    EntitySpace,
    ExperimentCatalog,
    ObjectiveSource,
    ParameterizedExperiment,
    objective_needs,
    objective_source,
)
from discospace.core.measurement_space import dependency_order
from discospace.core.spec import SpaceSpec
from discospace.events import SpaceRegistered


@dataclass(frozen=True)
class KnownSpace:
    """A registered space as the explorer uses it.

    `experiments` is in dependency order: every experiment comes after those it depends on;
    `observed_ids` (the observed property ids) follow the measurement space's declared order,
    which decides where an objective's values come from.
    """

    space_id: str
    sample_store: str
    entity_space: EntitySpace
    experiments: tuple[ParameterizedExperiment, ...]
    observed_ids: tuple[str, ...] = ()
    spec: SpaceSpec | None = field(default=None, compare=False)
    """The registered spec (canonical form): what spaces derived from this one start from."""

    @cached_property
    def independent(self) -> tuple[ParameterizedExperiment, ...]:
        """Experiments that need constitutive properties only: requested with each draw."""
        return tuple(e for e in self.experiments if not e.is_dependent)

    @cached_property
    def _by_id(self) -> dict[str, ParameterizedExperiment]:
        return {experiment.id: experiment for experiment in self.experiments}

    def experiment(self, experiment_id: str) -> ParameterizedExperiment | None:
        return self._by_id.get(experiment_id)

    @cached_property
    def needs(self) -> dict[str, tuple[ObjectiveSource, ...]]:
        """Per dependent experiment, the (experiment, target) values it reads: it is skipped
        for an entity where one of them has no valid result (`objective_points`)."""
        return objective_needs(self.experiments)

    @property
    def size(self) -> int | float:
        return self.entity_space.size

    def measures(self, objective: str) -> ObjectiveSource | None:
        """(experiment id, target) whose values hold `objective`, or None when none does.

        The rule is `discospace.core.results.objective_source`: an observed property id names
        its experiment, a bare target name the first experiment declared that measures it.
        """
        return objective_source(objective, self.observed_ids)


SpaceEntry: TypeAlias = KnownSpace | str
"""A usable space, or the sentence saying why the explorer cannot run operations on it."""


def known_space(event: SpaceRegistered) -> SpaceEntry:
    """The space a registration describes, or why it cannot be used."""
    try:
        space = DiscoverySpace.from_spec(event.spec)
        measurement_space = space.measurement_space(ExperimentCatalog(event.experiments))
        ordered = dependency_order(measurement_space.experiments)
    except DiscospaceError as error:
        return f"space '{event.space_id}' cannot be explored: {error}"
    observed = measurement_space.observed_property_ids
    return KnownSpace(
        event.space_id, space.sample_store, space.entity_space, ordered, observed, event.spec
    )
