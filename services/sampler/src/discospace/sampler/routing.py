"""Which pool measures what: a fold of `ActuatorRegistered`, and the routing rule.

A pool offers the experiments its actuators announced. A pool may declare the GPU model its
machines carry; an entity with a `gpu_model` property then goes to a pool of that model, or to
a pool that declares none (one that serves any model). Among several pools that fit, the
entity's id picks one, so the same entity always goes to the same pool and the work spreads.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from discospace.core import Entity
from discospace.core.canonical import Value, format_value
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
        self.gpu_models: dict[str, str | None] = {}
        self._announced: dict[tuple[str, str], frozenset[str]] = {}
        self._offers: dict[tuple[str, str], set[str]] = defaultdict(set)

    def record(self, event: ActuatorRegistered) -> None:
        """Fold one announcement in: the latest GPU model of a pool wins, and the latest
        catalog of an (actuator, pool) is all it offers (an experiment it no longer announces
        is no longer routed to it)."""
        self.gpu_models[event.pool] = event.gpu_model
        key = (event.actuator, event.pool)
        for experiment in self._announced.get(key, frozenset()):
            self._offers[(event.actuator, experiment)].discard(event.pool)
        self._announced[key] = frozenset(spec.experiment for spec in event.experiments)
        for spec in event.experiments:
            self._offers[(spec.actuator, spec.experiment)].add(event.pool)

    @property
    def names(self) -> tuple[str, ...]:
        """Every pool that announced itself, sorted."""
        return tuple(sorted(self.gpu_models))

    def pools_offering(self, actuator: str, experiment: str) -> frozenset[str]:
        return frozenset(self._offers.get((actuator, experiment), ()))

    def route(self, ref: ExperimentRef, entity: Entity) -> str | Unroutable:
        """The pool that measures `ref` on `entity`, or why none can."""
        offering = self.pools_offering(ref.actuator, ref.experiment)
        if not offering:
            return Unroutable(
                f"no pool offers experiment '{ref.experiment}' of actuator '{ref.actuator}'"
            )
        fitting = self._fitting(offering, entity.get(GPU_MODEL_PROPERTY))
        if not fitting:
            model = format_value(entity[GPU_MODEL_PROPERTY])
            return Unroutable(
                f"no pool offering experiment '{ref.experiment}' of actuator '{ref.actuator}' "
                f"has GPU model '{model}' (pools: {', '.join(sorted(offering))})"
            )
        return fitting[int(entity.id, 16) % len(fitting)]

    def _fitting(self, pools: frozenset[str], gpu_model: Value | None) -> list[str]:
        """Pools of the entity's GPU model, else pools that declare none; sorted, so the
        entity id picks the same one every time (and spreads entities over them)."""
        if gpu_model is None:
            return sorted(pools)
        wanted = format_value(gpu_model)
        same = sorted(p for p in pools if self.gpu_models.get(p) == wanted)
        return same or sorted(p for p in pools if self.gpu_models.get(p) is None)
