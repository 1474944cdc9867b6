"""The actuator worker's decisions, pure: its announcement, and what a request leads to.

Running an experiment happens in an actuator plugin (I/O, GPUs); plugins arrive with the
discovery loop, so for now a request leads to no event.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeAlias

from discospace.core import ExperimentSpec
from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementStarted,
)
from discospace.events.envelope import content_id

Outcome: TypeAlias = MeasurementStarted | MeasurementCompleted | MeasurementFailed


def announcement(
    actuator: str,
    pool: str,
    worker_id: str,
    experiments: tuple[ExperimentSpec, ...],
    occurred_at: datetime,
) -> ActuatorRegistered:
    """The catalog this worker offers; its id is new at every start of the worker."""
    return ActuatorRegistered(
        event_id=f"actuator-{content_id(actuator, pool, worker_id, occurred_at.isoformat())}",
        occurred_at=occurred_at,
        actuator=actuator,
        pool=pool,
        experiments=experiments,
        worker_id=worker_id,
    )


def measure(event: MeasurementRequested, now: datetime) -> list[Outcome]:
    """What measuring `event` produced (nothing until actuator plugins exist)."""
    return []
