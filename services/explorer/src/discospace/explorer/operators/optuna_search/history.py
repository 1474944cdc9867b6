"""An operation's history as an optimizer reads it: what it was told, and what is in flight.

A point is *told* once every objective's experiment has a result for it: feasible with the
objective values when all are valid numbers, infeasible otherwise (`is_valid = 0` is a
constraint, not a value). An objective measured by a dependent experiment that will never run
for the point (an experiment it reads from gave no valid result) makes it infeasible too.
Told points come in a fixed order: the warm start (results of the sample store from before the
operation started, oldest first), then the operation's own results in the order they arrived
(the same on every replay). Points the operation requested and that are not told yet are *in
flight*, in the order they were requested; a point that failed for good stays there (a
sampler with a constant liar treats it as a poor point, and it is never proposed again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from discospace.core import (
    Entity,
    EntityError,
    Objective,
    ObjectiveSource,
    objective_points,
)
from discospace.explorer.domain.operator import OperationView
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace


@dataclass(frozen=True)
class Source:
    """An objective, and where its values come from in the space."""

    objective: Objective
    at: ObjectiveSource

    @property
    def direction(self) -> str:
        return self.objective.direction

    @classmethod
    def of(cls, objective: Objective, space: KnownSpace) -> Source | None:
        found = space.measures(objective.property)
        return None if found is None else cls(objective, found)


@dataclass(frozen=True)
class Told:
    """A point with its result: objective values, or None when it is infeasible."""

    entity: Entity
    values: tuple[float, ...] | None


@dataclass(frozen=True)
class History:
    """What the optimizer knows when it asks."""

    warm: tuple[Told, ...]
    own: tuple[Told, ...]
    in_flight: tuple[Entity, ...]
    requested: tuple[Entity, ...]
    """Every point the operation requested, in order (told or not)."""

    @property
    def told(self) -> tuple[Told, ...]:
        return self.warm + self.own

    @property
    def taken(self) -> set[str]:
        """Ids of the points never to propose again: told, requested or in flight."""
        return {t.entity.id for t in self.told} | {e.id for e in self.requested}


def history_of(view: OperationView, sources: Sequence[Source], warm_start: bool) -> History:
    """The history of the operation `view` shows, for these objectives."""
    requested = _requested(view)
    own = told_points(view.outcomes, sources, view.space)
    own_ids = {e.id for e in requested} | {t.entity.id for t in own}
    warm = told_points(view.store_results, sources, view.space) if warm_start else ()
    told_ids = {t.entity.id for t in own}
    in_flight = tuple(e for e in requested if e.id not in told_ids)
    warm_kept = tuple(t for t in warm if t.entity.id not in own_ids)
    return History(warm_kept, own, in_flight, requested)


def _requested(view: OperationView) -> tuple[Entity, ...]:
    points = []
    for values in view.entities.values():
        entity = _entity(values, view.space)
        if entity is not None:
            points.append(entity)
    return tuple(points)


def _entity(values: Mapping[str, object] | None, space: KnownSpace) -> Entity | None:
    if values is None:
        return None
    try:
        return space.entity_space.normalise(values)
    except EntityError:
        return None


def told_points(
    outcomes: Iterable[PairResult], sources: Sequence[Source], space: KnownSpace
) -> tuple[Told, ...]:
    """Points whose every source experiment has a result, or never will (an experiment it
    reads from gave no valid result), in the order they completed
    (`discospace.core.results.objective_points`)."""
    points = objective_points(outcomes, [source.at for source in sources], space.needs)
    entities = ((_entity(p.results[0].entity_values, space), p.values) for p in points)
    return tuple(Told(entity, values) for entity, values in entities if entity is not None)
