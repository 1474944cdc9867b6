"""Discovery spaces: entity space + measurement space + the sample store they use.

The id is a content hash of the canonical form (properties sorted by name, values of a domain
sorted, experiments sorted, sample store), so registering the same space twice gives the same id
and reordering properties in the file does not change it.
"""

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

from discospace.core.canonical import canonical_json, normalise_value, not_finite, short_hash
from discospace.core.errors import DiscospaceError, MeasurementSpaceError, SpecError
from discospace.core.experiment import ExperimentCatalog, parameterized_experiment_id
from discospace.core.measurement_space import MeasurementSpace
from discospace.core.space import EntitySpace
from discospace.core.spec import ExperimentRef, SpaceSpec

SPACE_ID_PREFIX = "space-"
SPACE_ID_HEX = 12


class SpaceRelation(StrEnum):
    """How two discovery spaces relate."""

    EQUAL = "equal"
    SUBSPACE = "subspace"
    SUPERSPACE = "superspace"
    UNRELATED = "unrelated"


def _canonical_ref(ref: ExperimentRef) -> dict[str, Any]:
    parameters = {k: normalise_value(v) for k, v in ref.parameterization.items()}
    return {"actuator": ref.actuator, "experiment": ref.experiment, "parameterization": parameters}


def _ref_key(ref: ExperimentRef) -> tuple[str, str]:
    return (ref.actuator, parameterized_experiment_id(ref.experiment, ref.parameterization))


NO_EXPERIMENT = "the measurement space has no experiment: a space needs at least one"


def _content_hash(canonical: dict[str, Any]) -> str:
    """The id's hex digits; a `SpecError` for what has no canonical form. The checks of the
    domains and experiments name such values where they can; this is the rule for the rest: an
    event written by another producer may hold any number or text JSON can."""
    try:
        return short_hash(canonical_json(canonical), SPACE_ID_HEX)
    except UnicodeEncodeError as error:
        text = repr(error.object[error.start : error.end])
        raise SpecError(
            f"the space holds text that is not valid Unicode ({text}, a lone surrogate)"
        ) from None
    except ValueError:
        raise SpecError("the space holds a number that is not finite (nan or infinity)") from None


@dataclass(frozen=True, eq=False)
class DiscoverySpace:
    """A discovery space. Build it with :meth:`from_spec` (which validates the domains)."""

    entity_space: EntitySpace
    experiments: tuple[ExperimentRef, ...]
    sample_store: str

    def __post_init__(self) -> None:
        keys = [_ref_key(ref) for ref in self.experiments]
        for key in keys:
            if keys.count(key) > 1:
                raise MeasurementSpaceError(
                    f"experiment '{key[1]}' of actuator '{key[0]}' appears twice "
                    "in the measurement space"
                )
        for ref in self.experiments:
            for name, value in ref.parameterization.items():
                if not_finite(value):
                    raise MeasurementSpaceError(
                        f"experiment '{ref.experiment}' of actuator '{ref.actuator}' sets "
                        f"'{name}' to {value}, which is not a finite number"
                    )

    @classmethod
    def from_spec(cls, spec: SpaceSpec) -> "DiscoverySpace":
        """The space a file describes; raises a :class:`DiscospaceError` naming the problem."""
        entity_space = EntitySpace.from_specs(spec.entity_space)
        return cls(entity_space, tuple(spec.measurement_space), spec.sample_store)

    def to_spec(self) -> SpaceSpec:
        return SpaceSpec(
            sample_store=self.sample_store,
            entity_space=self.entity_space.to_specs(),
            measurement_space=self.experiments,
        )

    # -- identity ----------------------------------------------------------------------------

    def canonical(self) -> dict[str, Any]:
        refs = sorted((_canonical_ref(r) for r in self.experiments), key=canonical_json)
        return {
            "sample_store": self.sample_store,
            "entity_space": self.entity_space.canonical(),
            "measurement_space": refs,
        }

    @cached_property
    def id(self) -> str:
        """``space-`` and 12 hex digits of the SHA-256 of the canonical JSON, computed once; a
        `SpecError` when the space holds what has no canonical JSON (see `_content_hash`)."""
        return SPACE_ID_PREFIX + _content_hash(self.canonical())

    @property
    def experiment_keys(self) -> frozenset[tuple[str, str]]:
        """(actuator, parameterized experiment id) of every experiment."""
        return frozenset(_ref_key(ref) for ref in self.experiments)

    # -- measurement space -------------------------------------------------------------------

    def measurement_space(self, catalog: ExperimentCatalog) -> MeasurementSpace:
        """The experiments resolved against a catalog, checked against the entity space."""
        problems = self.problems(catalog)
        if problems:
            raise MeasurementSpaceError("; ".join(problems))
        return MeasurementSpace.from_refs(self.experiments, catalog)

    def shape_problems(self) -> list[str]:
        """Why the space could never be measured, whatever the catalog: it names no experiment.

        A space without experiments can still be described (its entity space), but not be
        registered or explored: nothing in it could ever be measured.
        """
        return [] if self.experiments else [NO_EXPERIMENT]

    def problems(self, catalog: ExperimentCatalog) -> list[str]:
        """Every reason the space cannot be measured with ``catalog`` (empty when it can)."""
        if self.shape_problems():
            return self.shape_problems()
        resolved, problems = [], []
        for ref in self.experiments:
            try:
                resolved.append(catalog.resolve(ref))
            except DiscospaceError as error:
                problems.append(str(error))
        try:
            return problems + MeasurementSpace(resolved).missing(self.entity_space)
        except DiscospaceError as error:  # two references to one parameterized experiment
            return [*problems, str(error)]

    # -- comparison --------------------------------------------------------------------------

    def is_subspace_of(self, other: "DiscoverySpace") -> bool:
        """Same store, every entity of this space in ``other``, every experiment in ``other``."""
        return (
            self.sample_store == other.sample_store
            and self.experiment_keys <= other.experiment_keys
            and self.entity_space.is_subspace_of(other.entity_space)
        )

    def compare(self, other: "DiscoverySpace") -> SpaceRelation:
        below, above = self.is_subspace_of(other), other.is_subspace_of(self)
        if below and above:
            return SpaceRelation.EQUAL
        if below:
            return SpaceRelation.SUBSPACE
        return SpaceRelation.SUPERSPACE if above else SpaceRelation.UNRELATED

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DiscoverySpace):
            return NotImplemented
        return self.compare(other) is SpaceRelation.EQUAL

    def __hash__(self) -> int:
        return hash((self.sample_store, self.experiment_keys))
