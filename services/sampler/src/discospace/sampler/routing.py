"""Which pool measures what: a fold of `ActuatorRegistered`, and the routing rule.

A pool offers the experiments its actuators announced. An actuator's workers of a pool may
declare the GPU model its machines carry; an entity with a `gpu_model` property then goes to a
pool whose workers of the experiment's actuator declare that model, or to one where they declare
none (they serve any model). The model is the actuator's on that pool, not the pool's: two
actuators of one pool announce on their own keys (partitions), so a pool's latest announcement
depended on the order a restart read them in. Among several pools that fit, the
entity's id picks one, so the same entity always goes to the same pool and the work spreads.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from discospace.core import DiscospaceError, Entity, Experiment, ExperimentSpec
from discospace.core.canonical import Value, format_value
from discospace.core.experiment import measured_as, parameterized_experiment_id
from discospace.core.spec import ExperimentRef
from discospace.events import ActuatorRegistered

GPU_MODEL_PROPERTY = "gpu_model"
"""The constitutive property that ties an entity to a GPU model, hence to a pool."""


@dataclass(frozen=True)
class Unroutable:
    """No pool can measure the pair, and why (one sentence)."""

    reason: str


class PoolDirectory:
    """The pools that announced themselves, their GPU model and the experiments they offer."""

    def __init__(self) -> None:
        self.gpu_models: dict[tuple[str, str], str | None] = {}
        """(actuator, pool) -> the GPU model its workers there declare (None: any)."""
        self._announced: dict[tuple[str, str], frozenset[str]] = {}
        self._defined: dict[tuple[str, str, str], Experiment | None] = {}
        """(actuator, pool, experiment) -> the experiment as the pool last announced it (None:
        a definition this code cannot read)."""
        self._measured_as: dict[tuple[str, str, str, tuple[str, ...]], str | None] = {}
        """(actuator, pool, parameterized experiment id, property names of the entities) ->
        `measured_as` of the pool's definition for them: computed once, not per pair routed."""
        self._offers: dict[tuple[str, str], set[str]] = defaultdict(set)

    def record(self, event: ActuatorRegistered) -> None:
        """Fold one announcement in: the latest GPU model and catalog of an (actuator, pool)
        win (an experiment it no longer announces is no longer routed to it)."""
        key = (event.actuator, event.pool)
        self.gpu_models[key] = event.gpu_model
        for experiment in self._announced.get(key, frozenset()):
            self._offers[(event.actuator, experiment)].discard(event.pool)
        self._announced[key] = frozenset(spec.experiment for spec in event.experiments)
        for spec in event.experiments:
            self._offers[(spec.actuator, spec.experiment)].add(event.pool)
            self._defined[(spec.actuator, event.pool, spec.experiment)] = _readable(spec)
        self._measured_as = {k: v for k, v in self._measured_as.items() if k[:2] != key}

    @property
    def names(self) -> tuple[str, ...]:
        """Every pool that announced itself, sorted."""
        return tuple(sorted({pool for _, pool in self.gpu_models}))

    def pools_offering(self, actuator: str, experiment: str) -> frozenset[str]:
        return frozenset(self._offers.get((actuator, experiment), ()))

    def route(
        self,
        ref: ExperimentRef,
        entity: Entity,
        registered: str | None = None,
        given: tuple[str, ...] = (),
    ) -> str | Unroutable:
        """The pool that measures `ref` on `entity`, or why none can. `registered`: what the
        experiment measures as the space was registered with it (`measured_as`, with the ref's
        parameterization and the space's property names `given`); a pool that now defines it
        otherwise (a new version of the actuator, other targets, options or defaults neither
        the space nor its entities set) is not sent the pair: its workers would refuse the
        request or measure something else under the space's id."""
        offering = self.pools_offering(ref.actuator, ref.experiment)
        if not offering:
            return Unroutable(
                f"no pool offers experiment '{ref.experiment}' of actuator '{ref.actuator}'"
            )
        if registered is not None:
            same = frozenset(
                pool for pool in offering if self._pool_measures_as(ref, pool, given) == registered
            )
            if not same:
                return Unroutable(
                    f"pools {', '.join(sorted(offering))} offer experiment '{ref.experiment}' of "
                    f"actuator '{ref.actuator}' defined otherwise than when the space was "
                    "registered (another version of the actuator): none measures what the "
                    "space's results mean"
                )
            offering = same
        fitting = self._fitting(ref.actuator, offering, entity.get(GPU_MODEL_PROPERTY))
        if not fitting:
            model = format_value(entity[GPU_MODEL_PROPERTY])
            return Unroutable(
                f"no pool offering experiment '{ref.experiment}' of actuator '{ref.actuator}' "
                f"has GPU model '{model}' (pools: {', '.join(sorted(offering))})"
            )
        return fitting[int(entity.id, 16) % len(fitting)]

    def _pool_measures_as(
        self, ref: ExperimentRef, pool: str, given: tuple[str, ...]
    ) -> str | None:
        experiment_id = parameterized_experiment_id(ref.experiment, ref.parameterization)
        key = (ref.actuator, pool, experiment_id, given)
        if key not in self._measured_as:
            defined = self._defined.get((ref.actuator, pool, ref.experiment))
            self._measured_as[key] = (
                measured_as(defined, ref.parameterization, given)
                if defined is not None and _files_under(defined, ref, experiment_id)
                else None
            )
        return self._measured_as[key]

    def _fitting(self, actuator: str, pools: frozenset[str], gpu_model: Value | None) -> list[str]:
        """Pools where `actuator` declares the entity's GPU model, else pools where it declares
        none; sorted, so the entity id picks the same one every time (and spreads entities)."""
        if gpu_model is None:
            return sorted(pools)
        wanted = format_value(gpu_model)
        models = {pool: self.gpu_models.get((actuator, pool)) for pool in pools}
        same = sorted(pool for pool, model in models.items() if model == wanted)
        return same or sorted(pool for pool, model in models.items() if model is None)


def _files_under(defined: Experiment, ref: ExperimentRef, experiment_id: str) -> bool:
    """Whether the pool's workers file the ref's measurements under its id: a value the space
    sets that is now the pool's default is dropped from their id (its workers refused the
    request for good, naming ids)."""
    try:
        return defined.parameterize(ref.parameterization).id == experiment_id
    except DiscospaceError:
        return False


def _readable(spec: ExperimentSpec) -> Experiment | None:
    """An announced experiment; None when this code cannot read it."""
    try:
        return Experiment.from_spec(spec)
    except DiscospaceError:
        return None
