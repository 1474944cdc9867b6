"""Drawing entities for one `SamplesRequested`: lazily from the space, or explicit points.

A count request reads positions `position .. position + count - 1` of the strategy's sequence
(`sequence.at(k)` is O(1): the space is never listed, and a redelivered request draws the same
entities). Explicit points are normalised against the entity space ("4" -> 4 in a numeric
domain) so they get their canonical id; a point outside the space is refused with the reason.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from discospace.core import (
    DiscoverySpace,
    Entity,
    EntitySequence,
    EntitySpace,
    ExperimentCatalog,
    MeasurementSpace,
    sampling,
)
from discospace.core.canonical import format_value, normalise_value
from discospace.core.errors import DiscospaceError
from discospace.events import SamplesRequested, SpaceRegistered
from discospace.events.common import PropertyValues

SEQUENCES_KEPT = 256
"""Sequences kept per space (one per seed in use): the most recently drawn from stay."""


@dataclass
class RegisteredSpace:
    """A registered space, built once, with the sequences recently drawn from."""

    event: SpaceRegistered
    _sequences: OrderedDict[tuple[object, ...], EntitySequence] = field(default_factory=OrderedDict)

    @cached_property
    def space(self) -> DiscoverySpace:
        return DiscoverySpace.from_spec(self.event.spec)

    @property
    def entity_space(self) -> EntitySpace:
        return self.space.entity_space

    @cached_property
    def definitions(self) -> dict[tuple[str, str], str]:
        """What each experiment of the space measures as the space was registered with it
        (`core.experiment.measured_as`, with its parameterization), by (actuator,
        parameterized experiment id): read once per space, not per pair routed. A space whose
        experiments this code cannot read is routed by name."""
        try:
            catalog = ExperimentCatalog(self.event.experiments)
            measured = MeasurementSpace.from_refs(self.event.spec.measurement_space, catalog)
        except DiscospaceError:
            return {}
        given = self.entity_space.names
        return {(item.actuator, item.id): item.measured_as(given) for item in measured}

    @property
    def sample_store(self) -> str:
        return self.event.spec.sample_store

    def sequence(self, request: SamplesRequested) -> EntitySequence:
        """The strategy's sequence (kept: building a permutation costs more than a draw)."""
        strategy = request.strategy or "random"
        seed = request.seed if request.seed is not None else 0
        key = (strategy, seed, request.group_by)
        if key in self._sequences:
            self._sequences.move_to_end(key)
        else:
            self._sequences[key] = sampling(self.entity_space, strategy, seed, request.group_by)
            if len(self._sequences) > SEQUENCES_KEPT:
                self._sequences.popitem(last=False)
        return self._sequences[key]


class SpaceBook:
    """Registered spaces by id: a fold of `SpaceRegistered` (the first registration wins)."""

    def __init__(self) -> None:
        self._spaces: dict[str, RegisteredSpace] = {}

    def record(self, event: SpaceRegistered) -> None:
        self._spaces.setdefault(event.space_id, RegisteredSpace(event))

    def get(self, space_id: str) -> RegisteredSpace | None:
        return self._spaces.get(space_id)

    def __contains__(self, space_id: object) -> bool:
        return space_id in self._spaces

    def __len__(self) -> int:
        return len(self._spaces)


@dataclass(frozen=True)
class Drawn:
    """The entities one request drew, each with the inputs its experiments need."""

    entities: tuple[Entity, ...]
    inputs: tuple[PropertyValues, ...]
    next_position: int
    exhausted: bool
    rejected: tuple[str, ...] = ()


def draw_entities(request: SamplesRequested, space: RegisteredSpace) -> Drawn:
    """The entities `request` asks for, from `space`."""
    if request.points is not None:
        return _from_points(request, space.entity_space)
    return _from_sequence(request, space)


def _from_sequence(request: SamplesRequested, space: RegisteredSpace) -> Drawn:
    try:
        sequence = space.sequence(request)
    except DiscospaceError as error:
        return Drawn(
            (), (), request.position, True, (f"cannot draw by {request.strategy}: {error}",)
        )
    start, count = request.position, request.count or 0
    end = max(start, int(min(start + count, sequence.size)))
    entities = tuple(sequence.at(position) for position in range(start, end))
    return Drawn(entities, tuple({} for _ in entities), end, end >= sequence.size)


def _from_points(request: SamplesRequested, entity_space: EntitySpace) -> Drawn:
    entities: dict[str, Entity] = {}
    inputs: dict[str, PropertyValues] = {}
    rejected: list[str] = []
    for index, point in enumerate(request.points or ()):
        try:
            entity = entity_space.normalise(point)
        except DiscospaceError as error:
            rejected.append(f"{describe_point(point)}: {error}")
            continue
        if entity.id not in entities:
            entities[entity.id] = entity
            inputs[entity.id] = dict(request.inputs[index]) if request.inputs else {}
    ids = list(entities)
    return Drawn(
        tuple(entities[i] for i in ids),
        tuple(inputs[i] for i in ids),
        request.position,
        False,
        tuple(rejected),
    )


def describe_point(point: Mapping[str, object]) -> str:
    """`batch_size=3, model=llama`: a point as a person reads it, names sorted."""
    return ", ".join(f"{name}={_shown(point[name])}" for name in sorted(point))


def _shown(value: object) -> str:
    try:
        return format_value(normalise_value(value))
    except TypeError:
        return repr(value)
