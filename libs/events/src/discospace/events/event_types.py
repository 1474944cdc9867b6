"""Every event type, by its stable name, and their JSON Schemas for `proto/`."""

from __future__ import annotations

from typing import Any

from discospace.events.actuators import ActuatorRegistered
from discospace.events.dead_letter import DeadLettered
from discospace.events.envelope import Event
from discospace.events.measurements import (
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
)
from discospace.events.operations import (
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    OperationStarted,
    SamplesDrawn,
    SamplesRequested,
)
from discospace.events.pipelines import (
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
)
from discospace.events.spaces import SpaceRegistered, SpaceRejected, SpaceSubmitted

SCHEMA_ID_BASE = "urn:discospace:event"

_ALL: tuple[type[Event], ...] = (
    SpaceSubmitted,
    SpaceRegistered,
    SpaceRejected,
    ActuatorRegistered,
    OperationRequested,
    OperationCancelRequested,
    OperationStarted,
    SamplesRequested,
    SamplesDrawn,
    PipelineJobStarted,
    PipelineJobCompleted,
    PipelineJobFailed,
    OperationCompleted,
    OperationFailed,
    MeasurementRequested,
    MeasurementStarted,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementReused,
    DeadLettered,
)
_BY_NAME: dict[str, type[Event]] = {cls.type_name(): cls for cls in _ALL}


class UnknownEventTypeError(LookupError):
    """A type name no event class carries."""


def all_event_types() -> tuple[type[Event], ...]:
    """Every event class, in a stable order (the order of the flow)."""
    return _ALL


def event_type(name: str) -> type[Event]:
    """The event class whose stable type name is `name`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownEventTypeError(f"unknown event type {name!r}") from None


def schema_id(cls: type[Event]) -> str:
    """`urn:discospace:event:<Type>:v<N>`: names one version of one event's schema."""
    return f"{SCHEMA_ID_BASE}:{cls.type_name()}:v{cls.current_version()}"


def json_schema(cls: type[Event]) -> dict[str, Any]:
    """The JSON Schema of the current version of one event, as it is read and written.

    `type` and `schema_version` are required constants: writers outside Python must set them.
    """
    schema = cls.model_json_schema()  # `type` and `schema_version` required: `Event`'s config
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id(cls),
        **schema,
    }
    schema["title"] = f"{cls.type_name()} v{cls.current_version()}"
    schema["x-topic"] = cls.TOPIC.value
    return schema


def json_schemas() -> dict[str, dict[str, Any]]:
    """Type name -> JSON Schema of its current version, for every event."""
    return {cls.type_name(): json_schema(cls) for cls in _ALL}
