"""The fold: each event becomes the rows it adds to the projection tables (pure, no I/O).

An event the views do not need (SamplesRequested, SamplesDrawn, DeadLettered) adds no row: it
is still kept in the raw `events` table. Values and specs are stored as canonical JSON so their
types (whole numbers, reals, strings, booleans) survive the round trip.
"""

from __future__ import annotations

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
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
)
from discospace.projector.tables import Table, TableRow

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
MEASUREMENT_KINDS: dict[type[Event], str] = {
    MeasurementRequested: "requested",
    MeasurementStarted: "started",
    MeasurementCompleted: "completed",
    MeasurementFailed: "failed",
    MeasurementReused: "reused",
}
SUBMISSION_KEY_PREFIX = "submission:"


@singledispatch
def rows_of(event: Event) -> tuple[TableRow, ...]:
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
def _space_submitted(event: SpaceSubmitted) -> tuple[TableRow, ...]:
    key = space_key_of(event.spec, event.submission_id)
    space_id = "" if key.startswith(SUBMISSION_KEY_PREFIX) else key
    return (_space_row(event, key, "submitted", space_id, event.spec, "[]", ""),)


@rows_of.register
def _space_registered(event: SpaceRegistered) -> tuple[TableRow, ...]:
    experiments = canonical_json([e.model_dump(mode="json") for e in event.experiments])
    row = _space_row(event, event.space_id, "registered", event.space_id, event.spec, experiments)
    return (row,)


@rows_of.register
def _space_rejected(event: SpaceRejected) -> tuple[TableRow, ...]:
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
) -> TableRow:
    return TableRow(
        Table.SPACES,
        (
            key,
            event.event_id,
            status,
            space_id,
            event.submission_id,
            event.occurred_at,
            spec.sample_store if spec else "",
            space_size(spec) if spec else None,
            spec.model_dump_json() if spec else "",
            experiments,
            reason,
        ),
    )


@rows_of.register
def _actuator_registered(event: ActuatorRegistered) -> tuple[TableRow, ...]:
    experiments = canonical_json([e.model_dump(mode="json") for e in event.experiments])
    values = (
        event.actuator,
        event.pool,
        event.worker_id,
        event.event_id,
        event.occurred_at,
        event.gpu_model,
        experiments,
    )
    return (TableRow(Table.ACTUATORS, values),)


@rows_of.register(OperationRequested)
@rows_of.register(OperationStarted)
@rows_of.register(OperationCancelRequested)
@rows_of.register(OperationCompleted)
@rows_of.register(OperationFailed)
def _operation_lifecycle(event: OperationLifecycleEvent) -> tuple[TableRow, ...]:
    values = (
        event.operation_id,
        event.event_id,
        event.type,
        event.occurred_at,
        getattr(event, "space_id", ""),
        event.model_dump_json(),
    )
    return (TableRow(Table.OPERATIONS, values),)


@rows_of.register(MeasurementRequested)
@rows_of.register(MeasurementStarted)
@rows_of.register(MeasurementFailed)
@rows_of.register(MeasurementReused)
def _measurement(event: MeasurementEvent) -> tuple[TableRow, ...]:
    return (_measurement_row(event),)


@rows_of.register
def _measurement_completed(event: MeasurementCompleted) -> tuple[TableRow, ...]:
    result = (
        event.sample_store,
        event.entity_id,
        event.experiment_id,
        event.event_id,
        event.space_id,
        event.operation_id,
        event.occurred_at,
        event.is_valid,
        event.invalid_reason or "",
        canonical_json(event.values),
        canonical_json(event.entity_values),
    )
    return (_measurement_row(event), TableRow(Table.RESULTS, result))


def _measurement_row(event: MeasurementEvent) -> TableRow:
    values = (
        event.space_id,
        event.operation_id,
        event.entity_id,
        event.experiment_id,
        event.event_id,
        MEASUREMENT_KINDS[type(event)],
        event.request_id,
        event.sample_store,
        event.occurred_at,
        getattr(event, "attempt", 1),
        getattr(event, "is_valid", None),
        _reason_of(event),
        getattr(event, "retryable", False),
        canonical_json(getattr(event, "values", {})),
        canonical_json(event.entity_values),
    )
    return TableRow(Table.MEASUREMENTS, values)


def _reason_of(event: MeasurementEvent) -> str:
    if isinstance(event, MeasurementFailed):
        return event.reason
    if isinstance(event, MeasurementCompleted | MeasurementReused):
        return event.invalid_reason or ""
    return ""
