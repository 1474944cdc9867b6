"""The points an optimizer may still propose, and the nearest free one to a suggestion.

An optimizer never proposes a point that is measured or in flight: in a finite space it samples
without replacement. When the sampler suggests a taken point, it is replaced by the nearest free
point, deterministically:

- `ListedPool`: the points are listed (a finite space of at most `LISTED_LIMIT` entities, or the
  operation's `candidates` option): the nearest by a distance that counts 1 per differing
  category and the difference of ranks (in [0, 1]) per number; ties go to the earlier point.
- `SequencePool`: a finite space too large to list: the first free point of the space's seeded
  random order (the sampler is asked a few times first).
- `OpenPool`: a space with continuous properties: a taken suggestion is asked again.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from discospace.core import Entity, sampling
from discospace.explorer.operators.optuna_search.space import SearchSpace

LISTED_LIMIT = 50_000
"""Finite spaces up to this size are listed, so a taken suggestion maps to the nearest point."""


@dataclass
class ListedPool:
    """Every point the optimizer may propose, in a fixed order."""

    search: SearchSpace
    points: Sequence[Entity]
    finite: bool = field(default=True, init=False)

    @cached_property
    def _ids(self) -> list[str]:
        return [point.id for point in self.points]

    @cached_property
    def _numbers(self) -> np.ndarray:
        columns = [d for d in self.search.dimensions if not d.is_category]
        rows = [[d.coordinate(p[d.name]) for d in columns] for p in self.points]
        return np.asarray(rows, dtype=float).reshape(len(self.points), len(columns))

    @cached_property
    def _categories(self) -> list[np.ndarray]:
        columns = [d for d in self.search.dimensions if d.is_category]
        return [np.asarray([str(p[d.name]) for p in self.points], dtype=object) for d in columns]

    def size(self) -> int:
        return len(self.points)

    @cached_property
    def _members(self) -> set[str]:
        return set(self._ids)

    def admits(self, point: Entity, taken: Collection[str]) -> bool:
        """Whether `point` is one of the listed points and not taken."""
        return point.id in self._members and point.id not in taken

    def free_count(self, taken: Collection[str]) -> int:
        return sum(1 for point_id in self._ids if point_id not in taken)

    def free(self, taken: Collection[str]) -> list[Entity]:
        """The free points, in their order."""
        return [p for p, i in zip(self.points, self._ids, strict=True) if i not in taken]

    def nearest_free(self, suggestion: Entity, taken: Collection[str]) -> Entity | None:
        """The free point nearest `suggestion` (the earliest among equals); None when none."""
        free = np.fromiter((i not in taken for i in self._ids), dtype=bool, count=len(self._ids))
        if not free.any():
            return None
        distance = self._distance(suggestion)
        distance[~free] = math.inf
        return self.points[int(np.argmin(distance))]

    def _distance(self, suggestion: Entity) -> np.ndarray:
        numbers = [d for d in self.search.dimensions if not d.is_category]
        categories = [d for d in self.search.dimensions if d.is_category]
        where = np.asarray([d.coordinate(suggestion[d.name]) for d in numbers], dtype=float)
        distance = np.abs(self._numbers - where).sum(axis=1)
        for column, dimension in zip(self._categories, categories, strict=True):
            distance += column != str(suggestion[dimension.name])
        return distance


@dataclass
class SequencePool:
    """A finite space too large to list: free points come from its seeded random order."""

    search: SearchSpace
    seed: int
    finite: bool = field(default=True, init=False)

    def size(self) -> int:
        return int(self.search.entity_space.size)

    def admits(self, point: Entity, taken: Collection[str]) -> bool:
        return point.id not in taken

    def free_count(self, taken: Collection[str]) -> int:
        return self.size() - len(taken)

    def nearest_free(self, suggestion: Entity, taken: Collection[str]) -> Entity | None:
        order = sampling(self.search.entity_space, "random", self.seed)
        for position in range(min(len(taken) + 1, self.size())):
            entity = order.at(position)
            if entity.id not in taken:
                return entity
        return None


@dataclass
class OpenPool:
    """A space with continuous properties: practically never exhausted."""

    search: SearchSpace
    seed: int = 0
    finite: bool = field(default=False, init=False)

    def size(self) -> float:
        return math.inf

    def admits(self, point: Entity, taken: Collection[str]) -> bool:
        return point.id not in taken

    def free_count(self, taken: Collection[str]) -> float:
        return math.inf

    def nearest_free(self, suggestion: Entity, taken: Collection[str]) -> Entity | None:
        """A free point drawn at random (the sampler kept suggesting a taken one: GP on a
        bound already measured), the same for the same seed and points taken."""
        drawn = self.search.entity_space.random(f"{self.seed}/free/{len(taken)}")
        for position in range(OPEN_DRAWS):
            point = drawn.at(position)
            if point.id not in taken:
                return point
        return None


OPEN_DRAWS = 100
"""Random points tried for a free one in an open space (each is free almost surely)."""

Pool = ListedPool | SequencePool | OpenPool


def pool_of(search: SearchSpace, seed: int, listed: Sequence[Entity] | None = None) -> Pool:
    """The pool of a search: the listed points, else the space (listed when small enough)."""
    if listed is not None:
        return ListedPool(search, listed)
    size = search.entity_space.size
    if math.isinf(size):
        return OpenPool(search, seed)
    if size <= LISTED_LIMIT:
        return ListedPool(search, list(search.entity_space))
    return SequencePool(search, seed)
