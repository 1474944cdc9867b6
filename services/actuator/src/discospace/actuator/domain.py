"""The actuator worker's decisions, pure: its announcement, the task a request asks for, and
the events that answer it.

A worker announces its actuator's catalog at every start (`ActuatorRegistered`, a new id each
time: the compacted actuators topic keeps the latest per actuator and pool). A request is
answered by `MeasurementStarted`, then `MeasurementCompleted` (valid, or invalid with the
reason) or `MeasurementFailed` (retryable for a transient failure). Each event's id derives
from the request's, so a request measured twice (redelivered after a crash) yields the same ids
and consumers keep one answer of each kind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeAlias

from discospace.actuator.plugin import MeasurementTask, Outcome, TransientFailure
from discospace.core import Entity, ExperimentCatalog, ExperimentSpec
from discospace.core.errors import DiscospaceError
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementStarted,
)
from discospace.events.envelope import content_id

Result: TypeAlias = MeasurementCompleted | MeasurementFailed


def announcement(
    actuator: str,
    pool: str,
    worker_id: str,
    experiments: tuple[ExperimentSpec, ...],
    occurred_at: datetime,
    gpu_model: str | None = None,
) -> ActuatorRegistered:
    """The catalog this worker offers on its pool; its id is new at every start."""
    return ActuatorRegistered(
        event_id=f"actuator-{content_id(actuator, pool, worker_id, occurred_at.isoformat())}",
        occurred_at=occurred_at,
        actuator=actuator,
        pool=pool,
        experiments=experiments,
        gpu_model=gpu_model,
        worker_id=worker_id,
    )


def task_of(request: MeasurementRequested, catalog: ExperimentCatalog) -> MeasurementTask | str:
    """The task the request asks for, or why this worker cannot run it (one sentence)."""
    ref = request.experiment
    experiment = catalog.get(ref.actuator, ref.experiment)
    if experiment is None:
        return (
            f"this worker does not offer experiment '{ref.experiment}' of actuator '{ref.actuator}'"
        )
    try:
        parameterized = experiment.parameterize(ref.parameterization)
        entity = Entity.of(request.entity_values)
    except DiscospaceError as error:
        return str(error)
    # the result is filed under the request's ids: they must name what is measured
    if entity.id != request.entity_id:
        return (
            f"the request's entity id '{request.entity_id}' is not that of its values "
            f"('{entity.id}')"
        )
    if parameterized.id != request.experiment_id:
        return (
            f"the request's experiment id '{request.experiment_id}' is not that of its "
            f"experiment and parameterization ('{parameterized.id}')"
        )
    return MeasurementTask(
        request.request_id, entity, parameterized, request.attempt, dict(request.inputs)
    )


def _subject(request: MeasurementRequested, worker_id: str) -> dict[str, Any]:
    """The fields an answer copies from its request."""
    return {
        "operation_id": request.operation_id,
        "request_id": request.request_id,
        "space_id": request.space_id,
        "sample_store": request.sample_store,
        "entity_id": request.entity_id,
        "entity_values": request.entity_values,
        "experiment_id": request.experiment_id,
        "attempt": request.attempt,
        "worker_id": worker_id,
    }


def started(request: MeasurementRequested, worker_id: str, now: datetime) -> MeasurementStarted:
    return MeasurementStarted.caused_by(request, now, **_subject(request, worker_id))


def failed(
    request: MeasurementRequested, worker_id: str, now: datetime, reason: str, retryable: bool
) -> MeasurementFailed:
    return MeasurementFailed.caused_by(
        request, now, **_subject(request, worker_id), reason=reason, retryable=retryable
    )


def result_of(
    request: MeasurementRequested,
    outcome: Outcome,
    worker_id: str,
    now: datetime,
    duration_s: float,
) -> Result:
    """The event that reports what measuring the request gave."""
    if isinstance(outcome, TransientFailure):
        return failed(request, worker_id, now, outcome.reason, retryable=True)
    return MeasurementCompleted.caused_by(
        request,
        now,
        **_subject(request, worker_id),
        **_result_fields(outcome),
        duration_seconds=max(duration_s, 0.0),
    )


def _result_fields(outcome: ValidMeasurement | InvalidMeasurement) -> dict[str, Any]:
    if isinstance(outcome, InvalidMeasurement):
        return {
            "values": {},
            "is_valid": False,
            "invalid_reason": outcome.reason,
            "uncertainty": {},
        }
    return {
        "values": outcome.values,
        "is_valid": True,
        "invalid_reason": None,
        "uncertainty": outcome.uncertainty or {},
    }
