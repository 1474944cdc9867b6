"""Measurement events: one entity, one parameterized experiment, requested then answered.

Keys. `MeasurementRequested` goes to its pool's measure topic keyed by entity id, so the
requests spread over every worker of the pool. Everything else (started, completed, failed,
reused) goes to the measurements topic keyed by operation id, so an operation's history stays
in order in one partition and the explorer folds it as it happened.

Every event names its subject in full (store, space, entity and its values, experiment), so the
projector and the sampler's memo need nothing but the event itself.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from discospace.core.measurement import InvalidMeasurement, MeasurementResult, ValidMeasurement
from discospace.core.results import MAX_ATTEMPT
from discospace.core.spec import ExperimentRef
from discospace.events.common import NonEmptyStr, OperationEvent, PropertyValues, SpaceId
from discospace.events.envelope import Record, content_id, type_field, version_field
from discospace.events.topics import (
    DEFAULT_TOPICS,
    POOL_PATTERN,
    Topic,
    TopicNames,
    measure_key,
    validate_pool,
)
from discospace.events.upcasting import Payload, upcaster

Attempt = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_ATTEMPT,
        description="1 for the first try, 2 for the first retry, ...",
        examples=[1],
    ),
]
WorkerId = Annotated[
    str,
    Field(min_length=1, description="The actuator worker that ran it.", examples=["a100-w0"]),
]


def measurement_request_id(operation_id: str, entity_id: str, experiment_id: str) -> str:
    """The request id of measuring one entity with one experiment for one operation.

    Derived from that content, so a redelivered `SamplesRequested` and every retry of the
    measurement refer to the same request.
    """
    return "req-" + content_id(operation_id, entity_id, experiment_id)


class _MeasurementEvent(OperationEvent):
    """The subject shared by every measurement event."""

    TOPIC = Topic.MEASUREMENTS

    request_id: NonEmptyStr = Field(
        description="Id of the measurement request (one entity, one experiment, one "
        "operation); every answer refers to it, across retries.",
        examples=["req-0b6c2f0e9d3a4c51"],
    )
    space_id: SpaceId
    sample_store: NonEmptyStr = Field(
        description="The shared sample store the result belongs to.", examples=["fms-a100"]
    )
    entity_id: NonEmptyStr = Field(
        description="Canonical id of the entity (same configuration, same id, in every space).",
        examples=["9f86d081884c7d65"],
    )
    entity_values: PropertyValues = Field(
        description="Constitutive property values of the entity.",
        examples=[{"batch_size": 8, "model_name": "llama-7b", "number_gpus": 2}],
    )
    experiment_id: NonEmptyStr = Field(
        description="Parameterized experiment id: the experiment and its non-default options.",
        examples=["finetune-full-v1.2.0-max_steps.10"],
    )


class MeasurementRequested(_MeasurementEvent):
    """The sampler asks a pool to measure one entity with one experiment."""

    TOPIC = Topic.MEASURE

    type: Literal["MeasurementRequested"] = type_field("MeasurementRequested")
    schema_version: Literal[1] = version_field(1)
    experiment: ExperimentRef = Field(
        description="The experiment to run, with its parameterization.",
        examples=[
            {
                "actuator": "SFTTrainer",
                "experiment": "finetune-full-v1.2.0",
                "parameterization": {"max_steps": 10},
            }
        ],
    )
    pool: NonEmptyStr = Field(
        description="The GPU pool whose workers run it (names the measure topic).",
        examples=["a100-80gb"],
        json_schema_extra={"pattern": POOL_PATTERN},
    )
    attempt: Attempt = 1
    inputs: PropertyValues = Field(
        default_factory=dict,
        description="Observed property values of other experiments that this (dependent) "
        "experiment requires, by observed property id; empty for an independent experiment.",
        examples=[{"finetune-full-v1.2.0.train_tokens_per_second": 4210.5}],
    )

    @field_validator("pool")
    @classmethod
    def _pool_names_a_topic(cls, pool: str) -> str:
        return validate_pool(pool)

    def key(self) -> bytes:
        return measure_key(self.entity_id)

    def topic(self, names: TopicNames = DEFAULT_TOPICS) -> str:
        return names.measure(self.pool)


class MeasurementStarted(_MeasurementEvent):
    """A worker took the request and started the experiment."""

    type: Literal["MeasurementStarted"] = type_field("MeasurementStarted")
    schema_version: Literal[1] = version_field(1)
    worker_id: WorkerId
    attempt: Attempt = 1


class Provenance(Record):
    """Where a result came from when no actuator measured it: one row of an imported file."""

    source: NonEmptyStr = Field(
        description="Name of the file the result was read from.", examples=["a100-runs.csv"]
    )
    sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 of the file's bytes, in hexadecimal.",
        examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],
    )
    row: int = Field(
        ge=1,
        description="The row of the file the result is (1 is the first row after the header).",
        examples=[12],
    )
    note: str = Field(
        default="",
        description="What the person who imported the file said about it.",
        examples=["March runs on the a100 cluster, before the driver update"],
    )
    imported_by: NonEmptyStr = Field(description="Who imported the file.", examples=["alice"])


class MeasurementCompleted(_MeasurementEvent):
    """The experiment ran to the end: valid values, or invalid with a reason.

    Version 2 added `uncertainty`; version 1 payloads are upcast with an empty one. The optional
    `provenance` (added without a new version) is written only when set: a result an actuator
    measured is written exactly as before it existed.
    """

    type: Literal["MeasurementCompleted"] = type_field("MeasurementCompleted")
    schema_version: Literal[2] = version_field(2)
    worker_id: WorkerId
    attempt: Attempt = 1
    values: PropertyValues = Field(
        description="Measured target property values (may be partial or empty when invalid).",
        examples=[{"train_tokens_per_second": 4210.5, "peak_gpu_memory_mib": 60211}],
    )
    is_valid: bool = Field(
        description="False when the run gave no usable result (e.g. out of memory).",
        examples=[True],
    )
    invalid_reason: str | None = Field(
        default=None,
        description="Why the result is invalid; present exactly when is_valid is false.",
        examples=["CUDA out of memory"],
    )
    uncertainty: dict[str, NonNegativeFloat] = Field(
        description="Standard uncertainty of some values, by the same keys (may be empty).",
        examples=[{"train_tokens_per_second": 12.5}],
    )
    duration_seconds: NonNegativeFloat = Field(
        description="How long the experiment ran, in seconds.", examples=[184.2]
    )
    provenance: Provenance | None = Field(
        default=None,
        description="Where the result came from when it was imported from a file rather than "
        "measured by an actuator (`discospace store import`); absent otherwise.",
        examples=[
            {
                "source": "a100-runs.csv",
                "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "row": 12,
                "note": "March runs on the a100 cluster",
                "imported_by": "alice",
            }
        ],
    )

    @model_serializer(mode="wrap")
    def _provenance_only_when_set(self, write: SerializerFunctionWrapHandler) -> Any:
        data = write(self)
        if self.provenance is None and isinstance(data, dict):
            data.pop("provenance", None)
        return data

    @model_validator(mode="after")
    def _coherent(self) -> MeasurementCompleted:
        if self.is_valid == (self.invalid_reason is not None):
            raise ValueError("invalid_reason is given exactly when is_valid is false")
        if self.is_valid and not self.values:
            raise ValueError("a valid measurement has at least one value")
        for name, spread in self.uncertainty.items():
            if name not in self.values or not math.isfinite(spread):
                raise ValueError(f"uncertainty of {name!r} needs a value and a finite spread")
        return self

    def result(self) -> MeasurementResult:
        """The result as the domain core knows it."""
        return _result(self.is_valid, self.values, self.invalid_reason, self.uncertainty)


@upcaster("MeasurementCompleted", from_version=1)
def _measurement_completed_v1_to_v2(payload: Payload) -> Payload:
    """Version 1 had no uncertainty: none was known."""
    return {**payload, "uncertainty": {}}


class MeasurementFailed(_MeasurementEvent):
    """The experiment could not run or crashed; the explorer retries when retryable."""

    type: Literal["MeasurementFailed"] = type_field("MeasurementFailed")
    schema_version: Literal[1] = version_field(1)
    worker_id: WorkerId
    attempt: Attempt = 1
    reason: NonEmptyStr = Field(
        description="What went wrong, in one sentence.",
        examples=["node lost during the run"],
    )
    retryable: bool = Field(
        description="True when trying again may succeed (transient infrastructure trouble).",
        examples=[True],
    )


class MeasurementReused(_MeasurementEvent):
    """The sample store already held this measurement: its result is reused, not measured."""

    type: Literal["MeasurementReused"] = type_field("MeasurementReused")
    schema_version: Literal[1] = version_field(1)
    reused_event_id: NonEmptyStr = Field(
        description="event_id of the MeasurementCompleted whose result is reused.",
        examples=["7d1e0a55-2b5c-5d8e-9f10-3c4b5a697887"],
    )
    values: PropertyValues = Field(
        description="The reused target property values.",
        examples=[{"train_tokens_per_second": 4210.5, "peak_gpu_memory_mib": 60211}],
    )
    is_valid: bool = Field(description="Whether the reused result is valid.", examples=[True])
    invalid_reason: str | None = Field(
        default=None,
        description="Why the reused result is invalid; present exactly when is_valid is false.",
        examples=["CUDA out of memory"],
    )

    @model_validator(mode="after")
    def _coherent(self) -> MeasurementReused:
        if self.is_valid == (self.invalid_reason is not None):
            raise ValueError("invalid_reason is given exactly when is_valid is false")
        return self

    def result(self) -> MeasurementResult:
        """The result as the domain core knows it."""
        return _result(self.is_valid, self.values, self.invalid_reason, {})


def _result(
    is_valid: bool, values: PropertyValues, reason: str | None, uncertainty: dict[str, float]
) -> MeasurementResult:
    if is_valid:
        return ValidMeasurement(values=values, uncertainty=uncertainty or None)
    return InvalidMeasurement(reason=reason or "invalid")
