"""The projector's answers as the client reads them (the HTTP contract, read tolerantly).

These mirror `discospace.projector.models` field for field (a test checks it); unknown fields are
ignored, so a newer projector that adds fields still reads.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from discospace.core.spec import ExperimentSpec, Scalar, SpaceSpec


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class SpaceSummary(_Answer):
    """One space in the list of spaces."""

    space_id: str | None
    submission_ids: list[str] = Field(default_factory=list)
    status: str = Field(description="registered, rejected, or submitted (no answer yet).")
    reason: str = ""
    sample_store: str | None = None
    size: int | None = Field(default=None, description="Absent when infinite or unknown.")
    submitted_at: datetime | None = None
    registered_at: datetime | None = None


class SpaceDetail(SpaceSummary):
    """One space: its summary, spec, resolved experiments and view columns."""

    spec: SpaceSpec | None = None
    experiments: list[ExperimentSpec] = Field(default_factory=list)
    constitutive_properties: list[str] = Field(default_factory=list)
    observed_properties: dict[str, str] = Field(
        default_factory=dict, description="View column -> observed property id."
    )


class ActuatorPool(_Answer):
    """One actuator on one pool: its latest catalog and the workers that announced it."""

    actuator: str
    pool: str
    gpu_model: str | None = None
    experiments: list[ExperimentSpec] = Field(default_factory=list)
    workers: list[str] = Field(default_factory=list)
    registered_at: datetime | None = None


OperationStatus = Literal["requested", "running", "cancelling", "completed", "failed"]
OPERATION_STATUSES: tuple[str, ...] = get_args(OperationStatus)
"""Every status an operation can have, in the order an operation goes through them."""


class OperationCounts(_Answer):
    """What became of an operation's entity-experiment pairs so far."""

    requested: int = 0
    measured: int = 0
    reused: int = 0
    failed: int = 0
    invalid: int = 0
    in_flight: int = 0
    cancelled: int = Field(default=0, description="In flight when the operation ended.")


class BestSoFar(_Answer):
    """The best valid result for the operation's objective so far."""

    property: str
    direction: Literal["min", "max"]
    value: float
    entity_id: str
    entity_values: dict[str, Scalar] = Field(default_factory=dict)
    experiment_id: str = ""
    values: dict[str, Scalar] = Field(default_factory=dict)


class OperatorChoice(_Answer):
    """What an operator that settles on one configuration chose (zeus_bso), with its costs."""

    values: dict[str, Scalar] = Field(default_factory=dict)
    expected_cost: float | None = None
    cost_so_far: float = 0.0
    recurrence_costs: tuple[float, ...] = ()
    recurrence_phases: tuple[str, ...] = ()


class OperationResult(_Answer):
    """One result an operation received, measured or reused from the store."""

    occurred_at: datetime
    entity_id: str
    entity_values: dict[str, Scalar] = Field(default_factory=dict)
    experiment_id: str
    reused: bool = False
    is_valid: bool
    values: dict[str, Scalar] = Field(default_factory=dict)


JobStatus = Literal[
    "pending", "running", "completed", "failed", "optional-failed", "cancelled", "skipped"
]
JOB_STATUSES: tuple[str, ...] = get_args(JobStatus)
"""Every status a pipeline's job can have."""


class ChildProgress(_Answer):
    """A pipeline job's child operation, in short: how far it got and how it ended."""

    operation_id: str
    operator: str | None = None
    space_id: str | None = None
    status: str = Field(description="requested, running, cancelling, completed or failed.")
    counts: OperationCounts = Field(default_factory=OperationCounts)
    done: int = 0
    total: int | None = None
    best: BestSoFar | None = None
    ending: str = Field(default="", description="Its stop detail or failure reason.")

    @property
    def ended(self) -> bool:
        return self.status in ("completed", "failed")


class PipelineJob(_Answer):
    """One job of a pipeline (or one trial, job `trial-<i>` in stage `trials`)."""

    job: str
    stage: str = ""
    trial: int | None = None
    kind: str | None = Field(default=None, description="operation, measure, hook or trial.")
    optional: bool = False
    status: str = Field(
        description="pending, running, completed, failed, optional-failed, cancelled, skipped."
    )
    child_operation_id: str | None = None
    space_id: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    result: dict[str, Any] | None = None
    reason: str | None = None
    child: ChildProgress | None = None


class OperationProgress(_Answer):
    """An operation: status, parameters, counts, best so far, and why it stopped; a pipeline's
    jobs."""

    operation_id: str
    parent_operation_id: str | None = Field(
        default=None, description="The pipeline that asked for this operation, if one did."
    )
    space_id: str | None = None
    operator: str | None = None
    status: str = Field(description="requested, running, cancelling, completed or failed.")
    requested_by: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    requested_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    counts: OperationCounts = Field(default_factory=OperationCounts)
    done: int = Field(default=0, description="measured + reused + failed.")
    total: int | None = None
    best: BestSoFar | None = None
    choice: OperatorChoice | None = None
    stop_reason: str | None = None
    stop_detail: str = ""
    failure_reason: str | None = None
    jobs: list[PipelineJob] = Field(
        default_factory=list, description="A pipeline's jobs in run order; empty otherwise."
    )

    @property
    def is_pipeline(self) -> bool:
        return self.operator == "pipeline"

    @property
    def ended(self) -> bool:
        """Whether the operation is over (completed, cancelled included, or failed)."""
        return self.status in ("completed", "failed")
