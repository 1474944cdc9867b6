"""Measurement spaces: the experiments that measure each entity of a discovery space."""

from collections.abc import Iterable, Iterator

from discospace.core.errors import DiscospaceError, MeasurementSpaceError
from discospace.core.experiment import ExperimentCatalog, ParameterizedExperiment
from discospace.core.space import EntitySpace
from discospace.core.spec import ExperimentRef


class MeasurementSpace:
    """A set of parameterized experiments, in the order given."""

    def __init__(self, experiments: Iterable[ParameterizedExperiment]) -> None:
        self.experiments: tuple[ParameterizedExperiment, ...] = tuple(experiments)
        seen: set[str] = set()
        for experiment in self.experiments:
            if experiment.id in seen:
                raise MeasurementSpaceError(
                    f"experiment '{experiment.id}' appears twice in the measurement space"
                )
            seen.add(experiment.id)

    @classmethod
    def from_refs(
        cls, refs: Iterable[ExperimentRef], catalog: ExperimentCatalog
    ) -> "MeasurementSpace":
        """Resolve references against a catalog; every unknown experiment is listed at once."""
        resolved, problems = [], []
        for ref in refs:
            try:
                resolved.append(catalog.resolve(ref))
            except DiscospaceError as error:
                problems.append(str(error))
        if problems:
            raise MeasurementSpaceError("; ".join(problems))
        return cls(resolved)

    def __iter__(self) -> Iterator[ParameterizedExperiment]:
        return iter(self.experiments)

    def __len__(self) -> int:
        return len(self.experiments)

    @property
    def experiment_ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.experiments)

    def get(self, experiment_id: str) -> ParameterizedExperiment | None:
        return next((e for e in self.experiments if e.id == experiment_id), None)

    @property
    def observed_property_ids(self) -> tuple[str, ...]:
        return tuple(p for e in self.experiments for p in e.observed_property_ids)

    @property
    def independent(self) -> tuple[ParameterizedExperiment, ...]:
        """Experiments that need only constitutive properties: they can run first."""
        return tuple(e for e in self.experiments if not e.is_dependent)

    def missing(self, entity_space: EntitySpace) -> list[str]:
        """Everything the experiments require that neither the entity space nor another
        experiment of this space provides, a parameterization the entity space overrides, one
        sentence each, and experiments that depend on each other in a cycle (empty when
        consistent)."""
        names, observed = set(entity_space.names), set(self.observed_property_ids)
        problems = []
        for experiment in self.experiments:
            for name in experiment.required_constitutive:
                if name not in names:
                    problems.append(
                        f"experiment '{experiment.id}' requires property '{name}', "
                        "which the entity space lacks"
                    )
            for name in sorted(set(experiment.parameterization) & names):
                problems.append(
                    f"experiment '{experiment.id}' is parameterized with {name}="
                    f"{experiment.parameterization[name]!r}, which the entity space also gives: "
                    f"each entity's own {name} would be measured under that id; drop one of them"
                )
            for name in experiment.required_observed:
                if name not in observed:
                    problems.append(
                        f"experiment '{experiment.id}' requires observed property '{name}', "
                        "which no experiment of the measurement space measures"
                    )
        if not problems:
            try:
                dependency_order(self.experiments)
            except DiscospaceError as error:
                problems.append(str(error))
        return problems

    def check_consistent(self, entity_space: EntitySpace) -> None:
        """Raise :class:`MeasurementSpaceError` listing everything missing."""
        problems = self.missing(entity_space)
        if problems:
            raise MeasurementSpaceError("; ".join(problems))

    def to_refs(self) -> tuple[ExperimentRef, ...]:
        return tuple(e.to_ref() for e in self.experiments)


def dependency_order(
    experiments: Iterable[ParameterizedExperiment],
) -> tuple[ParameterizedExperiment, ...]:
    """The experiments, each after those it depends on (stable otherwise).

    Raises `DiscospaceError` when some depend on each other in a cycle: they could never run.
    """
    pending = list(experiments)
    ordered: list[ParameterizedExperiment] = []
    while pending:
        placed = {e.id for e in ordered}
        ready = [e for e in pending if e.depends_on <= placed]
        if not ready:
            raise DiscospaceError(_cycle_sentence(pending))
        ordered.extend(ready)
        pending = [e for e in pending if e not in ready]
    return tuple(ordered)


def _cycle_sentence(pending: list[ParameterizedExperiment]) -> str:
    """The experiments in a cycle, apart from those that only wait on it."""
    cycle = pending
    while True:  # drop what no experiment left depends on, until only the cycle is left
        needed = set().union(*(e.depends_on for e in cycle))
        kept = [e for e in cycle if e.id in needed]
        if len(kept) == len(cycle):
            break
        cycle = kept
    names = ", ".join(sorted(f"'{e.id}'" for e in cycle))
    sentence = f"experiments {names} depend on each other in a cycle"
    waiting = sorted(f"'{e.id}'" for e in pending if e not in cycle)
    if waiting:
        sentence += f" ({', '.join(waiting)} depend{'s' if len(waiting) == 1 else ''} on it)"
    return sentence
