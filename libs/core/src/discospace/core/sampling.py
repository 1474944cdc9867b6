"""Orders in which an entity space is sampled: sequential (grid), random and grouped.

Each order is an :class:`EntitySequence`: ``at(position)`` is O(1) in the size of the space, so a
restarted sampler resumes at position k without replaying the first k, and nothing is listed.
Random orders are seeded bijections (see ``permutation.py``): no entity comes twice, and the same
seed gives the same sequence on every machine.
"""

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Literal

from discospace.core.canonical import Value
from discospace.core.entity import Entity
from discospace.core.errors import EntitySpaceError
from discospace.core.permutation import Permutation, derive_seed, unit_interval
from discospace.core.space import EntitySpace

Strategy = Literal["random", "sequential", "grouped"]
Seed = int | str | bytes


class EntitySequence(ABC):
    """An ordering of (part of) an entity space, addressable by position."""

    def __init__(self, space: EntitySpace) -> None:
        self.space = space

    @property
    def size(self) -> int | float:
        """How many positions the sequence has (``math.inf`` when it never ends)."""
        return self.space.size

    @abstractmethod
    def at(self, position: int) -> Entity:
        """The entity at ``position`` (0-based)."""

    def _check(self, position: int) -> None:
        if not 0 <= position < self.size:
            raise EntitySpaceError(f"position {position} is outside a sequence of {self.size}")

    def iter_from(self, start: int) -> Iterator[Entity]:
        """Entities from position ``start`` on: resuming costs nothing."""
        end = self.size
        positions = itertools.count(start) if math.isinf(end) else range(start, int(end))
        return (self.at(position) for position in positions)

    def __iter__(self) -> Iterator[Entity]:
        return self.iter_from(0)

    def take_iter(self, count: int, start: int = 0) -> Iterator[Entity]:
        """At most ``count`` entities from position ``start``, lazily."""
        return itertools.islice(self.iter_from(start), count)

    def take(self, count: int, start: int = 0) -> list[Entity]:
        """At most ``count`` entities from position ``start``."""
        return list(self.take_iter(count, start))


class SequentialSampling(EntitySequence):
    """Grid order: the mixed-radix index, last property fastest."""

    def __init__(self, space: EntitySpace) -> None:
        super().__init__(space)
        space._require_finite("sequential sampling")

    def at(self, position: int) -> Entity:
        return self.space.entity_at(position)


def _refuse_identifiers(space: EntitySpace) -> None:
    for prop in space.properties:
        if prop.domain.kind == "identifier":
            raise EntitySpaceError(
                f"property '{prop.name}' is an identifier domain and cannot be sampled"
            )


class RandomSampling(EntitySequence):
    """Random order without replacement, from a seed.

    In a finite space this is a permutation: drawing ``size`` entities yields each once. When
    some properties are continuous the sequence never ends: the finite properties run through a
    fresh permutation every ``finite size`` positions, and continuous values are drawn from
    their probability at a stable pseudo-random quantile of (seed, position, property).
    """

    def __init__(self, space: EntitySpace, seed: Seed) -> None:
        super().__init__(space)
        _refuse_identifiers(space)
        self.seed = seed
        self._finite = tuple(p for p in space.properties if p.domain.is_finite)
        self._finite_size = math.prod(int(p.domain.size) for p in self._finite)
        self._cycle = -1
        self._permutation = Permutation(self._finite_size, derive_seed(seed, "random", 0))

    def at(self, position: int) -> Entity:
        self._check(position)
        cycle, offset = divmod(position, self._finite_size)
        finite = self.space.decode(self._permutation_for(cycle).at(offset), self._finite)
        if len(finite) == len(self.space.properties):
            return self.space._entity(finite)
        return self.space._entity(self._with_draws(finite, position))

    def _permutation_for(self, cycle: int) -> Permutation:
        if cycle != self._cycle:
            self._cycle = cycle
            self._permutation = Permutation(
                self._finite_size, derive_seed(self.seed, "random", cycle)
            )
        return self._permutation

    def _with_draws(self, finite: list[Value], position: int) -> list[Value]:
        drawn = iter(finite)
        return [
            next(drawn)
            if prop.domain.is_finite
            else prop.domain.draw(unit_interval(self.seed, "draw", position, prop.name))
            for prop in self.space.properties
        ]


class GroupedSampling(EntitySequence):
    """Random order in which entities sharing the values of ``group_by`` come together.

    Groups come in a seeded random order; inside a group, entities come in a seeded random order
    of their own. Position k is group ``k // group_size``, member ``k % group_size``.
    """

    def __init__(self, space: EntitySpace, group_by: Sequence[str], seed: Seed) -> None:
        super().__init__(space)
        space._require_finite("grouped sampling")
        if not group_by:
            raise EntitySpaceError("grouped sampling needs at least one property to group by")
        for name in group_by:
            space.get_property(name)
        chosen = set(group_by)
        self.seed = seed
        self.group_by = tuple(group_by)
        self._keys = tuple(p for p in space.properties if p.name in chosen)
        self._members = tuple(p for p in space.properties if p.name not in chosen)
        self.group_size = math.prod(int(p.domain.size) for p in self._members)
        self.group_count = math.prod(int(p.domain.size) for p in self._keys)
        self._groups = Permutation(self.group_count, derive_seed(seed, "groups"))
        self._group = -1
        self._inside = Permutation(self.group_size, derive_seed(seed, "group", 0))

    def at(self, position: int) -> Entity:
        self._check(position)
        rank, offset = divmod(position, self.group_size)
        group = self._groups.at(rank)
        member = self._inside_group(group).at(offset)
        keys = iter(self.space.decode(group, self._keys))
        members = iter(self.space.decode(member, self._members))
        chosen = {p.name for p in self._keys}
        values = [next(keys) if p.name in chosen else next(members) for p in self.space.properties]
        return self.space._entity(values)

    def _inside_group(self, group: int) -> Permutation:
        if group != self._group:
            self._group = group
            self._inside = Permutation(self.group_size, derive_seed(self.seed, "group", group))
        return self._inside


def sampling(
    space: EntitySpace,
    strategy: Strategy,
    seed: Seed = 0,
    group_by: Sequence[str] = (),
) -> EntitySequence:
    """The sequence for a sampling strategy, as a sampler receives it in a request."""
    if strategy == "random":
        return RandomSampling(space, seed)
    if strategy == "sequential":
        return SequentialSampling(space)
    if strategy == "grouped":
        return GroupedSampling(space, group_by, seed)
    raise EntitySpaceError(f"unknown sampling strategy '{strategy}'")
