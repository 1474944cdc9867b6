"""Entity spaces: ordered constitutive properties, their size, membership and index.

A finite entity space numbers its points with a mixed-radix index (the last property varies
fastest, as in ``itertools.product``), so any point is found from its index, and any index from
its point, in O(number of properties): the space is never listed.
"""

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from discospace.core.canonical import Value, format_value
from discospace.core.entity import Entity
from discospace.core.errors import EntityError, EntitySpaceError
from discospace.core.properties import ConstitutiveProperty, canonical_property, magnitude
from discospace.core.spec import PropertySpec

if TYPE_CHECKING:
    from discospace.core.sampling import EntitySequence


MAX_SPACE_SIZE = 10**300
"""The most entities a finite space may have: its size stays a number a float holds (the
samplers, the views and the progress figures compare it with floats)."""


class EntitySpace:
    """An ordered list of constitutive properties; its points are :class:`Entity` values."""

    def __init__(self, properties: Iterable[ConstitutiveProperty]) -> None:
        self.properties: tuple[ConstitutiveProperty, ...] = tuple(properties)
        if not self.properties:
            raise EntitySpaceError("an entity space needs at least one property")
        self._by_name: dict[str, ConstitutiveProperty] = {}
        for prop in self.properties:
            if prop.name in self._by_name:
                raise EntitySpaceError(f"property '{prop.name}' appears twice in the entity space")
            self._by_name[prop.name] = prop
        order = sorted(range(len(self.properties)), key=lambda i: self.properties[i].name)
        self._name_order = tuple(enumerate(order))
        self._sorted_names = tuple(self.properties[i].name for i in order)
        self._finite = all(prop.domain.is_finite for prop in self.properties)
        sizes = [prop.domain.size for prop in self.properties]
        self._size: int | float = math.prod(int(n) for n in sizes) if self._finite else math.inf
        if self._finite and self._size > MAX_SPACE_SIZE:
            raise EntitySpaceError(
                f"the entity space has {magnitude(int(self._size))} entities, over the limit of "
                "10^300: "
                "fewer properties, fewer values, or continuous ones"
            )

    @classmethod
    def from_specs(cls, specs: Iterable[PropertySpec]) -> "EntitySpace":
        return cls(ConstitutiveProperty.from_spec(spec) for spec in specs)

    def to_specs(self) -> tuple[PropertySpec, ...]:
        return tuple(prop.to_spec() for prop in self.properties)

    # -- shape -------------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(prop.name for prop in self.properties)

    def get_property(self, name: str) -> ConstitutiveProperty:
        try:
            return self._by_name[name]
        except KeyError:
            raise EntitySpaceError(f"property '{name}' is not in the entity space") from None

    def __len__(self) -> int:
        return len(self.properties)

    @property
    def size(self) -> int | float:
        """Number of entities: the product of domain sizes, ``math.inf`` when uncountable."""
        return self._size

    @property
    def is_finite(self) -> bool:
        return self._finite

    def infinite_properties(self) -> tuple[ConstitutiveProperty, ...]:
        return tuple(p for p in self.properties if not p.domain.is_finite)

    # -- membership --------------------------------------------------------------------------

    def why_not(self, point: Mapping[str, object]) -> str | None:
        """Why ``point`` is not in the space (one sentence), or None when it is."""
        for name in point:
            if name not in self._by_name:
                return f"property '{name}' is not in the entity space"
        for prop in self.properties:
            if prop.name not in point:
                return f"property '{prop.name}' is missing"
            value = point[prop.name]
            if prop.domain.normalise(value) is None:
                shown = format_value(value) if isinstance(value, Value) else repr(value)
                return (
                    f"property '{prop.name}' has the value {shown}, "
                    f"which is not in its domain {prop.domain.describe()}"
                )
        return None

    def __contains__(self, point: object) -> bool:
        return isinstance(point, Mapping) and self.why_not(point) is None

    def holds_as_is(self, values: Mapping[str, object]) -> bool:
        """Whether `values` (a stored entity's) are one of the space's entities as they are,
        not converted: the text "4", measured by a space that lists batch sizes as text, is
        another entity than the number 4, of another id."""
        if len(values) != len(self._by_name) or any(n not in self._by_name for n in values):
            return False
        return all(
            (normal := self._by_name[name].domain.normalise(value)) is not None and normal == value
            for name, value in values.items()
        )

    def normalise(self, point: Mapping[str, object]) -> Entity:
        """The entity of ``point``, values converted to their domain ("4" -> 4).

        Raises :class:`EntityError` with the reason when the point is outside the space.
        """
        reason = self.why_not(point)
        if reason is not None:
            raise EntityError(reason)
        values = [prop.domain.normalise(point[prop.name]) for prop in self.properties]
        return self._entity(values)

    def _entity(self, values: Sequence[Value]) -> Entity:
        """An entity from canonical values in declared order (no checks: a hot path)."""
        names = self._sorted_names
        return Entity(tuple([(names[j], values[i]) for j, i in self._name_order]))

    # -- index -------------------------------------------------------------------------------

    def _require_finite(self, what: str) -> None:
        for prop in self.properties:
            if not prop.domain.is_finite:
                raise EntitySpaceError(
                    f"{what} needs a finite entity space, "
                    f"but property '{prop.name}' is {prop.domain.kind}"
                )

    def decode(self, index: int, properties: Sequence[ConstitutiveProperty]) -> list[Value]:
        """Values of ``properties`` (finite) at a mixed-radix ``index``, last one fastest."""
        values: list[Value] = [0] * len(properties)
        for position in range(len(properties) - 1, -1, -1):
            domain = properties[position].domain
            index, digit = divmod(index, domain.size)
            values[position] = domain.value_at(digit)
        return values

    def entity_at(self, index: int) -> Entity:
        """The entity at ``index`` in grid order (0 <= index < size), in O(properties)."""
        self._require_finite("addressing entities by index")
        if not 0 <= index < self.size:
            raise EntitySpaceError(f"index {index} is outside a space of {self.size} entities")
        return self._entity(self.decode(index, self.properties))

    def index_of(self, point: Mapping[str, object]) -> int:
        """The grid index of a point of the space (the inverse of :meth:`entity_at`)."""
        self._require_finite("indexing entities")
        entity = self.normalise(point)
        index = 0
        for prop in self.properties:
            index = index * int(prop.domain.size) + prop.domain.index_of(entity[prop.name])
        return index

    # -- sampling ----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Entity]:
        """Every entity in grid order (lazily)."""
        return iter(self.sequential())

    def sequential(self) -> "EntitySequence":
        from discospace.core.sampling import SequentialSampling

        return SequentialSampling(self)

    def random(self, seed: int | str | bytes) -> "EntitySequence":
        from discospace.core.sampling import RandomSampling

        return RandomSampling(self, seed)

    def grouped(self, group_by: Sequence[str], seed: int | str | bytes) -> "EntitySequence":
        from discospace.core.sampling import GroupedSampling

        return GroupedSampling(self, group_by, seed)

    # -- comparison --------------------------------------------------------------------------

    def is_subspace_of(self, other: "EntitySpace") -> bool:
        """Same property names, and each domain is a sub-domain of the other's."""
        if set(self._by_name) != set(other._by_name):
            return False
        return all(
            prop.domain.is_subdomain_of(other._by_name[prop.name].domain)
            for prop in self.properties
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EntitySpace):
            return NotImplemented
        return self.is_subspace_of(other) and other.is_subspace_of(self)

    def __hash__(self) -> int:
        return hash(self._sorted_names)

    def canonical(self) -> list[dict[str, Any]]:
        """Canonical form for content hashes: properties sorted by name."""
        return [canonical_property(self._by_name[name]) for name in self._sorted_names]

    def __repr__(self) -> str:
        return f"EntitySpace({', '.join(self.names)}; size={self.size})"
