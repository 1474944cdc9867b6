"""Entities: points of an entity space, with a canonical, deterministic identity.

The identity of an entity depends only on its property values: properties ordered by name,
numbers normalised (4 and 4.0 are one value), so one configuration has one id in every space.
``Entity.id`` is a short stable hash (for Kafka keys and table keys); ``Entity.label`` is the
readable form ``batch_size.16-gpu_model.NVIDIA-A100-80GB-PCIe-...``. The label is for people:
values may contain ``-`` or ``.``, so only the id is guaranteed unique.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

from discospace.core.canonical import (
    Value,
    canonical_json,
    format_value,
    normalise_value,
    short_hash,
)
from discospace.core.errors import EntityError

ENTITY_ID_LENGTH = 16
"""Hex digits of an entity id (64 bits)."""


def canonical_values(values: Mapping[str, object]) -> tuple[tuple[str, Value], ...]:
    """The (name, value) pairs of a point, ordered by name, numbers normalised."""
    try:
        return tuple(sorted((str(name), normalise_value(v)) for name, v in values.items()))
    except TypeError as error:
        raise EntityError(f"an entity holds a value that is not a scalar: {error}") from None


def _id_of(pairs: tuple[tuple[str, Value], ...]) -> str:
    return short_hash(canonical_json(dict(pairs)), ENTITY_ID_LENGTH)


def _label_of(pairs: tuple[tuple[str, Value], ...]) -> str:
    return "-".join(f"{name}.{format_value(value)}" for name, value in pairs)


def entity_id(values: Mapping[str, object]) -> str:
    """The stable short id of a point: 16 hex digits of SHA-256 of its canonical JSON."""
    return _id_of(canonical_values(values))


def entity_label(values: Mapping[str, object]) -> str:
    """The readable canonical form of a point: ``name.value`` pairs ordered by name."""
    return _label_of(canonical_values(values))


@dataclass(frozen=True)
class Entity(Mapping[str, Value]):
    """One point: canonical (name, value) pairs, ordered by name. Read it like a mapping.

    Build it with :meth:`of` (which normalises) or from an entity space, which also checks
    membership and converts values to their domain (``"4"`` -> ``4`` in a numeric domain).
    """

    pairs: tuple[tuple[str, Value], ...]

    @classmethod
    def of(cls, values: Mapping[str, object]) -> "Entity":
        return cls(canonical_values(values))

    @cached_property
    def id(self) -> str:
        return _id_of(self.pairs)

    @cached_property
    def label(self) -> str:
        return _label_of(self.pairs)

    @cached_property
    def _types(self) -> tuple[type, ...]:
        return tuple(type(value) for _, value in self.pairs)

    @cached_property
    def _lookup(self) -> dict[str, Value]:
        return dict(self.pairs)

    def __getitem__(self, name: str) -> Value:
        return self._lookup[name]

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Entity):  # types too: True == 1 in Python, not in an id
            return self.pairs == other.pairs and self._types == other._types
        return super().__eq__(other)

    def __hash__(self) -> int:
        return hash(self.pairs)

    def as_dict(self) -> dict[str, Value]:
        return dict(self.pairs)

    def __repr__(self) -> str:
        return f"Entity({self.label})"
