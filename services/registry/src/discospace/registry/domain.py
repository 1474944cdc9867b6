"""The registry's decisions, pure: fold catalogs and registrations, answer a submitted space.

No Kafka, clock or randomness here: the time of the answer comes in as an argument.

A registration's event id is derived from the space id alone, and the registry remembers every
registration (its own, read back from the spaces topic): submitting a registered space again
answers with the identical first registration, which every consumer drops as a duplicate. So a
space is registered once, whoever submits it and however often. A rejection is caused by its
submission, so a redelivered submission yields the same rejection.

A registration carries the whole space, so it can be larger than the submission that fit the
message size limit: a space whose registration would not fit is rejected with a sentence
(registering it would fail to publish, and be retried forever).
"""

from __future__ import annotations

from datetime import datetime
from functools import singledispatch
from typing import TypeAlias

from discospace.core import (
    DiscospaceError,
    DiscoverySpace,
    Experiment,
    ExperimentCatalog,
    ExperimentSpec,
    MeasurementSpace,
    ParameterizedExperiment,
)
from discospace.core.experiment import measured_as
from discospace.events import (
    MAX_MESSAGE_BYTES,
    ActuatorRegistered,
    Event,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    caused_event_id,
)
from discospace.events.envelope import MAX_OPERATION_REASON_CHARS, event_message_size, shortened

SpaceAnswer: TypeAlias = SpaceRegistered | SpaceRejected


def registration_event_id(space_id: str) -> str:
    """The event id of the registration of ``space_id``: the same for every submission."""
    return caused_event_id(space_id, 0, SpaceRegistered.type_name())


class RegistryState:
    """What the registry knows: the experiments actuators offer, and the registered spaces."""

    def __init__(self) -> None:
        self.catalog = ExperimentCatalog()
        self.actuators: set[str] = set()
        self.registrations: dict[str, SpaceRegistered] = {}
        self.announced: dict[tuple[str, str], tuple[ExperimentSpec, ...]] = {}
        """The latest catalog of each (actuator, pool): the key of its announcements."""
        self.conflicts: dict[tuple[str, str], str] = {}
        """(actuator, experiment) the catalog cannot offer, and why (one sentence)."""
        self.stored: dict[tuple[str, str], tuple[str, str, str]] = {}
        """(sample store, parameterized experiment id) -> (actuator, experiment, space id) of
        the first registered space whose results are kept under that id in that store."""
        self.defined: dict[tuple[str, str, frozenset[str]], tuple[str, ParameterizedExperiment]]
        self.defined = {}
        """(sample store, parameterized experiment id, property names of the entities) -> (space
        id, the experiment as registered) of the first registered space whose entities of those
        names have results under that id in that store: only entities of the same names share
        ids, so only they could be handed results of another definition."""

    def __len__(self) -> int:
        """How many experiments the catalog holds."""
        return len(self.catalog)

    def is_registered(self, space_id: str) -> bool:
        return space_id in self.registrations

    def offered_by(self, actuator: str) -> list[str]:
        """The experiments ``actuator`` offers, sorted."""
        return sorted(e.identifier for e in self.catalog if e.actuator == actuator)


def evolve(state: RegistryState, event: ActuatorRegistered | SpaceRegistered) -> list[str]:
    """Fold ``event`` into ``state``; return why any part of it was left out."""
    return _fold(event, state)


@singledispatch
def _fold(event: Event, state: RegistryState) -> list[str]:
    raise TypeError(f"the registry does not fold {event.type}")


@_fold.register
def _(event: ActuatorRegistered, state: RegistryState) -> list[str]:
    """An announcement is its pool's whole catalog: it replaces the pool's previous one (an
    experiment the pool no longer offers is gone), and the catalog is merged again from every
    pool's latest, in pool order, so the merge does not depend on the order the topic's
    partitions are read in (a restart decides as the live registry did)."""
    state.actuators.add(event.actuator)
    state.announced[(event.actuator, event.pool)] = event.experiments
    problems = []
    for spec in event.experiments:
        try:
            Experiment.from_spec(spec)
        except DiscospaceError as error:
            problems.append(f"{spec.actuator}/{spec.experiment}: {error}")
    _merge(state)
    return problems


def _merge(state: RegistryState) -> None:
    """The catalog of every pool's latest announcement. Left out, and remembered as a conflict:
    an experiment two pools define differently (a space using it could be measured by either
    definition), and one whose identifier is another's parameterized id (`bench-precision.bf16`
    beside `bench` with an option `precision`: the store would hand one's results to the
    other)."""
    offered: dict[tuple[str, str], dict[str, Experiment]] = {}
    for (_, pool), specs in sorted(state.announced.items()):
        for spec in specs:
            try:
                experiment = Experiment.from_spec(spec)
            except DiscospaceError:
                continue
            offered.setdefault(experiment.key, {})[pool] = experiment
    state.catalog = ExperimentCatalog()
    state.conflicts = {}
    for (actuator, name), by_pool in offered.items():
        definitions = list(by_pool.values())
        meanings = {measured_as(definition) for definition in definitions}
        if len(meanings) > 1:  # a reworded description is the same; a default 1 beside true not
            state.conflicts[(actuator, name)] = (
                f"actuator '{actuator}' defines experiment '{name}' differently on pools "
                f"{', '.join(sorted(by_pool))}: a space using it could be measured by either "
                "definition; announce one definition on every pool, or name them apart"
            )
        else:
            state.catalog.add(definitions[0])
    for experiment in list(state.catalog):
        reading = _read_as_parameterized(experiment, state.catalog)
        if reading is not None:
            state.conflicts[experiment.key] = reading


def _read_as_parameterized(experiment: Experiment, catalog: ExperimentCatalog) -> str | None:
    """Why `experiment`'s identifier reads as another experiment's parameterized id, if it does."""
    for other in catalog:
        prefix = f"{other.identifier}-"
        if other is experiment or not experiment.identifier.startswith(prefix):
            continue
        rest = experiment.identifier[len(prefix) :]
        if any(rest.startswith(f"{option}.") for option in other.optional_properties):
            return (
                f"experiment '{experiment.identifier}' of actuator '{experiment.actuator}' has "
                f"the id of experiment '{other.identifier}' of actuator '{other.actuator}' "
                f"parameterized with {rest}: the store would hand one's results to the other; "
                "name it apart"
            )
    return None


@_fold.register
def _(event: SpaceRegistered, state: RegistryState) -> list[str]:
    """Remember a registration; the first one of a space wins."""
    if event.space_id in state.registrations:
        return []
    state.registrations[event.space_id] = event
    try:  # its experiments as it registered them: no entity space built at every start
        catalog = ExperimentCatalog(event.experiments)
        measured = MeasurementSpace.from_refs(event.spec.measurement_space, catalog)
    except DiscospaceError:  # registered by an older rule: it keeps no claim on the store
        return []
    names = frozenset(spec.name for spec in event.spec.entity_space)
    for experiment in measured:
        key = (event.spec.sample_store, experiment.id)
        claim = (experiment.actuator, experiment.experiment.identifier, event.space_id)
        state.stored.setdefault(key, claim)
        state.defined.setdefault((*key, names), (event.space_id, experiment))
    return []


def _store_problems(
    state: RegistryState, space: DiscoverySpace, resolved: list[ParameterizedExperiment]
) -> list[str]:
    """An experiment whose results the space's sample store already keeps, under the same id,
    for another experiment: the store knows results by experiment id, not by actuator or
    experiment, so each would be handed the other's (a `bench` of `vllm` reusing the throughput
    a `bench` of `synthetic` measured; `train` with option `lr-warmup: 5` and `train-lr` with
    `warmup: 5`, both `train-lr-warmup.5`)."""
    problems = []
    names = space.entity_space.names
    for experiment in resolved:
        claim = state.stored.get((space.sample_store, experiment.id))
        mine = (experiment.actuator, experiment.experiment.identifier)
        if claim is None:
            continue
        actuator, identifier, space_id = claim
        if claim == (*mine, space_id):
            key = (space.sample_store, experiment.id, frozenset(names))
            defined = state.defined.get(key)
            if defined is not None and defined[1].measured_as(names) != experiment.measured_as(
                names
            ):  # an option each entity gives is measured with its value, not the default
                problems.append(_redefined(space.sample_store, experiment, defined[0]))
            continue
        theirs = f"experiment '{identifier}' of actuator '{actuator}'"
        if actuator == experiment.actuator:
            ours = f"experiment '{experiment.experiment.identifier}'"
        else:
            ours = f"actuator '{experiment.actuator}'"
        problems.append(
            f"sample store '{space.sample_store}' keeps the results of {theirs} under the id "
            f"'{experiment.id}' (space '{space_id}'): those of {ours} would be read as theirs; "
            "use another sample store"
        )
    return problems


def _redefined(store: str, experiment: ParameterizedExperiment, space_id: str) -> str:
    return (
        f"sample store '{store}' keeps the results of experiment "
        f"'{experiment.experiment.identifier}' of actuator '{experiment.actuator}' (id "
        f"'{experiment.id}') as it was defined when space '{space_id}' was registered, and the "
        "catalog now defines it otherwise (its targets, required properties or options): "
        "the old results would be read as new ones; use another sample store"
    )


def decide_submission(
    state: RegistryState,
    event: SpaceSubmitted,
    occurred_at: datetime,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> SpaceAnswer:
    """Register the submitted space when it is well formed, the catalog can measure it and its
    registration fits `max_message_bytes`.

    A space registered before gets its first registration back, unchanged. A new registration
    is folded into ``state`` at once, so a second submission arriving before the first
    registration is read back from the topic gets the identical answer too.
    """
    try:
        space = DiscoverySpace.from_spec(event.spec)
        space_id = space.id  # hashing refuses what the domains' checks leave (see the space)
    except DiscospaceError as error:
        return _rejected(event, occurred_at, str(error), space_id=None)
    if space_id in state.registrations:
        return state.registrations[space.id]
    problems = problems_of(state, space)
    if problems:
        return _rejected(event, occurred_at, "; ".join(problems), space_id=space.id)
    registered = _registered(state, event, space, occurred_at)
    size = event_message_size(registered)
    if size > max_message_bytes:
        return _rejected(event, occurred_at, _too_large(space, size, max_message_bytes), space.id)
    evolve(state, registered)
    return registered


def _too_large(space: DiscoverySpace, size: int, limit: int) -> str:
    values = sum(len(spec.values or ()) for spec in space.entity_space.to_specs())
    return (
        f"the space is too large to register: its registration would be {size} bytes, over the "
        f"{limit}-byte message limit ({values} listed values); give long runs of values as a "
        "range with an interval, or split the space"
    )


def problems_of(state: RegistryState, space: DiscoverySpace) -> list[str]:
    """Every reason the catalog cannot measure ``space``, one sentence each (as
    ``DiscoverySpace.problems``), an unknown experiment with a hint of what is offered."""
    if space.shape_problems():
        return space.shape_problems()
    resolved, problems, hinted = [], [], set()
    for ref in space.experiments:
        conflict = state.conflicts.get((ref.actuator, ref.experiment))
        if conflict is not None:
            problems.append(conflict)
            continue
        try:
            resolved.append(state.catalog.resolve(ref))
        except DiscospaceError as error:  # what an actuator offers, said once
            hint = "" if ref.actuator in hinted else _hint(state, ref.actuator, ref.experiment)
            if hint:
                hinted.add(ref.actuator)
            problems.append(f"{error}{hint}")
    try:
        problems += MeasurementSpace(resolved).missing(space.entity_space)
    except DiscospaceError as error:
        return [*problems, str(error)]
    return problems + _store_problems(state, space, resolved)


def _hint(state: RegistryState, actuator: str, experiment: str) -> str:
    """What the submitter can use instead of an experiment no actuator offers."""
    if state.catalog.get(actuator, experiment) is not None:
        return ""
    if not state.actuators:
        return " (no actuator has registered yet)"
    if actuator not in state.actuators:
        known = ", ".join(sorted(state.actuators))
        return f" (no actuator '{actuator}' is registered; registered actuators: {known})"
    offered = state.offered_by(actuator)
    if not offered:  # its pools announced none, or only definitions in conflict
        return f" (actuator '{actuator}' offers no experiment now)"
    return f" (actuator '{actuator}' offers: {', '.join(offered)})"


def _registered(
    state: RegistryState, event: SpaceSubmitted, space: DiscoverySpace, occurred_at: datetime
) -> SpaceRegistered:
    return SpaceRegistered(
        event_id=registration_event_id(space.id),
        occurred_at=occurred_at,
        causation_id=event.event_id,
        submission_id=event.submission_id,
        space_id=space.id,
        spec=space.to_spec(),
        experiments=_experiment_specs(state, space),
    )


def _experiment_specs(state: RegistryState, space: DiscoverySpace) -> tuple[ExperimentSpec, ...]:
    found = (state.catalog.get(ref.actuator, ref.experiment) for ref in space.experiments)
    return tuple(experiment.to_spec() for experiment in found if experiment is not None)


def _rejected(
    event: SpaceSubmitted, occurred_at: datetime, reason: str, space_id: str | None
) -> SpaceRejected:
    return SpaceRejected.caused_by(
        event,
        occurred_at,
        submission_id=event.submission_id,
        space_id=space_id,
        reason=shortened(reason, MAX_OPERATION_REASON_CHARS),  # a rejection always fits
    )
