"""Where each entity of an operation stands, experiment by experiment.

An entity is in flight from the moment it is requested until every experiment of the space is
settled for it: measured or reused (valid or not), failed for good, or skipped because an
experiment it depends on gave no valid result. Dependent experiments become `Ready` once the
experiments they depend on completed validly, with the observed values they need as inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

from discospace.core import ParameterizedExperiment
from discospace.core.experiment import split_observed_property_id
from discospace.events import OperationCounts
from discospace.events.common import PropertyValues
from discospace.explorer.domain.operation import OperationState
from discospace.explorer.domain.pairs import (
    Done,
    GaveUp,
    InFlight,
    PairFacts,
    PairStatus,
    RetryDue,
    RetryPolicy,
    status,
)
from discospace.explorer.domain.spaces import KnownSpace


@dataclass(frozen=True)
class Waiting:
    """A dependent experiment whose dependencies are still being measured."""


@dataclass(frozen=True)
class Ready:
    """A dependent experiment whose dependencies are valid: to request, with these inputs."""

    inputs: PropertyValues


@dataclass(frozen=True)
class Skipped:
    """A dependent experiment that cannot run for this entity."""

    reason: str


Step: TypeAlias = PairStatus | Waiting | Ready | Skipped
SETTLED = (Done, GaveUp, Skipped)


@dataclass(frozen=True)
class EntityProgress:
    """Every experiment's step for one entity, in dependency order."""

    entity_id: str
    steps: Mapping[str, Step]

    @property
    def settled(self) -> bool:
        return all(isinstance(step, SETTLED) for step in self.steps.values())


def entity_progress(
    state: OperationState, space: KnownSpace, policy: RetryPolicy, entity: str
) -> EntityProgress:
    steps: dict[str, Step] = {}
    for experiment in space.experiments:
        facts = state.pairs.get((entity, experiment.id))
        unasked = _before_request(facts, experiment, steps)
        steps[experiment.id] = unasked if unasked is not None else status(facts or _FIRST, policy)
    return EntityProgress(entity, steps)


_FIRST = PairFacts()
"""The facts of a pair drawn with its entity and not answered yet."""


def _before_request(
    facts: PairFacts | None, experiment: ParameterizedExperiment, steps: Mapping[str, Step]
) -> Waiting | Ready | Skipped | None:
    """The step of a dependent experiment not requested yet (None: its status tells)."""
    if not experiment.is_dependent or _asked(facts):
        return None
    for dependency in sorted(experiment.depends_on):
        step = steps[dependency]
        if isinstance(step, Skipped | GaveUp) or (isinstance(step, Done) and not _valid(step)):
            return Skipped(f"'{dependency}' gave no valid result")
        if not isinstance(step, Done):
            return Waiting()
    return _ready(experiment, steps)


def _asked(facts: PairFacts | None) -> bool:
    return facts is not None and bool(
        facts.requested_attempt or facts.outcome or facts.failures or facts.rejected
    )


def _valid(step: Done) -> bool:
    return step.outcome.is_valid


def _ready(experiment: ParameterizedExperiment, steps: Mapping[str, Step]) -> Ready | Skipped:
    inputs: PropertyValues = {}
    for observed in experiment.required_observed:
        source, target = split_observed_property_id(observed)
        step = steps[source]
        if not isinstance(step, Done) or target not in step.outcome.values:
            return Skipped(f"'{source}' measured no '{target}'")
        inputs[observed] = step.outcome.values[target]
    return Ready(inputs)


def inputs_for(experiment: ParameterizedExperiment, progress: EntityProgress) -> PropertyValues:
    """The observed values a (dependent) experiment needs for this entity; {} when none."""
    ready = _ready(experiment, progress.steps) if experiment.is_dependent else Ready({})
    return ready.inputs if isinstance(ready, Ready) else {}


def refused(state: OperationState) -> int:
    """Pairs of explicit points the sampler refused (outside the space, no pool) that no pool
    was ever asked for (a retry it refused was requested, and failed)."""
    return sum(
        1
        for facts in state.pairs.values()
        if facts.rejected and not facts.outcome and not facts.failures
    )


def counts(state: OperationState, progress: list[EntityProgress]) -> OperationCounts:
    """What became of the operation's measurements so far."""
    steps = [step for entity in progress for step in entity.steps.values()]
    measured = [o for o in state.outcomes if not o.reused]
    requested = sum(isinstance(s, InFlight | RetryDue | Done | GaveUp) for s in steps)
    # a point the sampler refused was never asked of a pool: neither requested nor failed, as
    # the projector counts it (so requested = measured + reused + failed + in flight)
    rejected = refused(state)
    return OperationCounts(
        requested=requested - rejected,
        measured=len(measured),
        reused=len(state.outcomes) - len(measured),
        failed=sum(isinstance(s, GaveUp) for s in steps) - rejected,
        invalid=sum(not o.is_valid for o in measured),
    )
