"""The sampler's state and decisions, pure.

State: the registered spaces (to draw entities from) and which pools offer each experiment
(to route a measurement request). `draw` answers one `SamplesRequested` with `SamplesDrawn`,
then `MeasurementRequested` (to a pool) or `MeasurementReused` (already in the sample store)
per entity and experiment; drawing arrives with the discovery loop, so for now it answers
nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeAlias

from discospace.events import (
    ActuatorRegistered,
    MeasurementRequested,
    MeasurementReused,
    SamplesDrawn,
    SamplesRequested,
    SpaceRegistered,
)

Answer: TypeAlias = SamplesDrawn | MeasurementRequested | MeasurementReused


@dataclass
class SamplerState:
    """The spaces the sampler can draw from and the pools that run each experiment."""

    spaces: dict[str, SpaceRegistered] = field(default_factory=dict)
    pools: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))


def evolve_space(state: SamplerState, event: SpaceRegistered) -> None:
    """Remember a registered space by its id."""
    state.spaces[event.space_id] = event


def evolve_pools(state: SamplerState, event: ActuatorRegistered) -> None:
    """Remember that `event.pool` runs each of the announced experiments."""
    for spec in event.experiments:
        state.pools[(spec.actuator, spec.experiment)].add(event.pool)


def draw(state: SamplerState, event: SamplesRequested, now: datetime) -> list[Answer]:
    """The answer to one request for samples (nothing until drawing exists)."""
    return []
