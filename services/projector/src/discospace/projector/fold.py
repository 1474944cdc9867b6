"""The fold: each event becomes the rows it adds to the projection tables (pure, no I/O).

An event the views do not need (SamplesRequested, SamplesDrawn, DeadLettered) adds no row: it
is still kept in the raw `events` table. A pipeline's job events (started, completed with the
job's result, failed) are rows of the `operations` table like its lifecycle events, under the
pipeline's id, with an empty `space_id` column: that column names the operation's own space, and
a job's space (a refined one) stays in the payload. Values and specs are stored as canonical
JSON so their types (whole numbers, reals, strings, booleans) survive the round trip.

Rows are given by column name (`Table.row`), so a value cannot land in another column: the
tables are declared once, in `discospace.store.tables`, and a missing, unknown or mistyped
column raises `SchemaError` while the row is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import singledispatch
from typing import TypeAlias

from discospace.core.canonical import canonical_json
from discospace.core.discovery import DiscoverySpace
from discospace.core.errors import DiscospaceError
from discospace.core.spec import SpaceSpec
from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    OperationStarted,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
)
from discospace.store.schema import Row
from discospace.store.tables import ACTUATORS, MEASUREMENTS, OPERATIONS, RESULTS, SPACES

MeasurementEvent: TypeAlias = (
    MeasurementRequested
    | MeasurementStarted
    | MeasurementCompleted
    | MeasurementFailed
    | MeasurementReused
)
OperationLifecycleEvent: TypeAlias = (
    OperationRequested
    | OperationStarted
    | OperationCancelRequested
    | OperationCompleted
    | OperationFailed
)
PipelineJobEvent: TypeAlias = PipelineJobStarted | PipelineJobCompleted | PipelineJobFailed
MEASUREMENT_KINDS: dict[type[Event], str] = {
    MeasurementRequested: "requested",
    MeasurementStarted: "started",
    MeasurementCompleted: "completed",
    MeasurementFailed: "failed",
    MeasurementReused: "reused",
}
SUBMISSION_KEY_PREFIX = "submission:"


@singledispatch
def rows_of(event: Event) -> tuple[Row, ...]:
    """The rows `event` adds to the projection tables (none for events the views ignore)."""
    return ()


def space_size(spec: SpaceSpec) -> str | None:
    """The number of entities of a space, in decimal; None when infinite or malformed."""
    try:
        size = DiscoverySpace.from_spec(spec).entity_space.size
    except DiscospaceError:
        return None
    return str(int(size)) if size != float("inf") else None


def space_key_of(spec: SpaceSpec, submission_id: str) -> str:
    """The space id of a spec, or `submission:<id>` when the spec is too broken to have one."""
    try:
        return DiscoverySpace.from_spec(spec).id
    except DiscospaceError:
        return SUBMISSION_KEY_PREFIX + submission_id


@rows_of.register
def _space_submitted(event: SpaceSubmitted) -> tuple[Row, ...]:
    key = space_key_of(event.spec, event.submission_id)
    space_id = "" if key.startswith(SUBMISSION_KEY_PREFIX) else key
    return (_space_row(event, key, "submitted", space_id, event.spec, "[]", ""),)


@rows_of.register
def _space_registered(event: SpaceRegistered) -> tuple[Row, ...]:
    experiments = canonical_json([e.model_dump(mode="json") for e in event.experiments])
    row = _space_row(event, event.space_id, "registered", event.space_id, event.spec, experiments)
    return (row,)


@rows_of.register
def _space_rejected(event: SpaceRejected) -> tuple[Row, ...]:
    space_id = event.space_id or ""
    key = space_id or SUBMISSION_KEY_PREFIX + event.submission_id
    return (_space_row(event, key, "rejected", space_id, None, "[]", event.reason),)


def _space_row(
    event: SpaceSubmitted | SpaceRegistered | SpaceRejected,
    key: str,
    status: str,
    space_id: str,
    spec: SpaceSpec | None,
    experiments: str,
    reason: str = "",
) -> Row:
    return SPACES.row(
        space_key=key,
        event_id=event.event_id,
        status=status,
        space_id=space_id,
        submission_id=event.submission_id,
        occurred_at=event.occurred_at,
        sample_store=spec.sample_store if spec else "",
        size=space_size(spec) if spec else None,
        spec=spec.model_dump_json() if spec else "",
        experiments=experiments,
        reason=reason,
    )


@rows_of.register
def _actuator_registered(event: ActuatorRegistered) -> tuple[Row, ...]:
    row = ACTUATORS.row(
        actuator=event.actuator,
        pool=event.pool,
        worker_id=event.worker_id,
        event_id=event.event_id,
        occurred_at=event.occurred_at,
        gpu_model=event.gpu_model,
        experiments=canonical_json([e.model_dump(mode="json") for e in event.experiments]),
    )
    return (row,)


@rows_of.register(OperationRequested)
@rows_of.register(OperationStarted)
@rows_of.register(OperationCancelRequested)
@rows_of.register(OperationCompleted)
@rows_of.register(OperationFailed)
def _operation_lifecycle(event: OperationLifecycleEvent) -> tuple[Row, ...]:
    row = OPERATIONS.row(
        operation_id=event.operation_id,
        event_id=event.event_id,
        type=event.type,
        occurred_at=event.occurred_at,
        space_id=""
        if isinstance(event, OperationCancelRequested | OperationFailed)
        else event.space_id,
        payload=event.model_dump_json(),
    )
    return (row,)


@rows_of.register(PipelineJobStarted)
@rows_of.register(PipelineJobCompleted)
@rows_of.register(PipelineJobFailed)
def _pipeline_job(event: PipelineJobEvent) -> tuple[Row, ...]:
    row = OPERATIONS.row(
        operation_id=event.operation_id,
        event_id=event.event_id,
        type=event.type,
        occurred_at=event.occurred_at,
        space_id="",
        payload=event.model_dump_json(),
    )
    return (row,)


@rows_of.register(MeasurementRequested)
@rows_of.register(MeasurementStarted)
@rows_of.register(MeasurementFailed)
@rows_of.register(MeasurementReused)
def _measurement(event: MeasurementEvent) -> tuple[Row, ...]:
    return (_measurement_row(event),)


@rows_of.register
def _measurement_completed(event: MeasurementCompleted) -> tuple[Row, ...]:
    entity_values = canonical_json(event.entity_values)  # once for both rows
    result = RESULTS.row(
        sample_store=event.sample_store,
        entity_id=event.entity_id,
        experiment_id=event.experiment_id,
        event_id=event.event_id,
        space_id=event.space_id,
        operation_id=event.operation_id,
        occurred_at=event.occurred_at,
        is_valid=event.is_valid,
        reason=event.invalid_reason or "",
        values=canonical_json(event.values),
        entity_values=entity_values,
    )
    return (_measurement_row(event, entity_values), result)


def _measurement_row(event: MeasurementEvent, entity_values: str | None = None) -> Row:
    return MEASUREMENTS.row(
        space_id=event.space_id,
        operation_id=event.operation_id,
        entity_id=event.entity_id,
        experiment_id=event.experiment_id,
        event_id=event.event_id,
        kind=MEASUREMENT_KINDS[type(event)],
        request_id=event.request_id,
        sample_store=event.sample_store,
        occurred_at=event.occurred_at,
        entity_values=entity_values or canonical_json(event.entity_values),
        **_outcome_of(event),
    )


@singledispatch
def _outcome_of(event: Event) -> dict[str, object]:
    """The columns of a measurement row that depend on what kind of measurement event it is."""
    raise TypeError(f"{event.type} is not a measurement event.")


@_outcome_of.register(MeasurementRequested)
@_outcome_of.register(MeasurementStarted)
def _outcome_of_request(event: MeasurementRequested | MeasurementStarted) -> dict[str, object]:
    return _outcome(attempt=event.attempt)


@_outcome_of.register
def _outcome_of_failure(event: MeasurementFailed) -> dict[str, object]:
    return _outcome(attempt=event.attempt, reason=event.reason, retryable=event.retryable)


@_outcome_of.register
def _outcome_of_result(event: MeasurementCompleted) -> dict[str, object]:
    return _result_outcome(event.attempt, event.is_valid, event.invalid_reason, event.values)


@_outcome_of.register
def _outcome_of_reuse(event: MeasurementReused) -> dict[str, object]:
    """A reuse is not an attempt of this space: it counts as its first."""
    return _result_outcome(1, event.is_valid, event.invalid_reason, event.values)


def _result_outcome(
    attempt: int, is_valid: bool, invalid_reason: str | None, values: Mapping[str, object]
) -> dict[str, object]:
    return _outcome(attempt=attempt, is_valid=is_valid, reason=invalid_reason or "", values=values)


def _outcome(
    *,
    attempt: int,
    is_valid: bool | None = None,
    reason: str = "",
    retryable: bool = False,
    values: Mapping[str, object] | None = None,
) -> dict[str, object]:
    return {
        "attempt": attempt,
        "is_valid": is_valid,
        "reason": reason,
        "retryable": retryable,
        "values": canonical_json(values) if values else "{}",  # most events carry none
    }
