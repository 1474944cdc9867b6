"""What the projector's HTTP API answers, as JSON: spaces, actuators, operations and progress.

`discospace.client` parses these documents; a change here is a change of the HTTP contract
(additive only: new fields with defaults).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from discospace.core.spec import ExperimentSpec, Scalar, SpaceSpec

SpaceStatus = Literal["submitted", "registered", "rejected"]
OperationStatus = Literal["requested", "running", "cancelling", "completed", "failed"]
JobStatus = Literal[
    "pending", "running", "completed", "failed", "optional-failed", "cancelled", "skipped"
]


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True)


class SpaceSummary(_Answer):
    """One space in the list of spaces."""

    space_id: str | None = Field(description="The space id; absent when the spec had none.")
    submission_ids: list[str] = Field(description="Submissions of this space, oldest first.")
    status: SpaceStatus = Field(description="registered, rejected, or submitted (no answer yet).")
    reason: str = Field(default="", description="Why it was rejected (empty otherwise).")
    sample_store: str | None = Field(description="The sample store the space uses.")
    size: int | None = Field(description="Number of entities; absent when infinite or unknown.")
    submitted_at: datetime | None = None
    registered_at: datetime | None = Field(
        default=None, description="When the registry answered (registered or rejected)."
    )


class SpaceDetail(SpaceSummary):
    """One space: its summary, spec, resolved experiments and view columns."""

    spec: SpaceSpec | None = None
    experiments: list[ExperimentSpec] = Field(default_factory=list)
    constitutive_properties: list[str] = Field(default_factory=list)
    observed_properties: dict[str, str] = Field(
        default_factory=dict,
        description="View column -> observed property id (`<experiment id>.<target>`).",
    )


class ActuatorPool(_Answer):
    """One actuator on one pool: its latest catalog and the workers that announced it."""

    actuator: str
    pool: str
    gpu_model: str | None = None
    experiments: list[ExperimentSpec]
    workers: list[str]
    registered_at: datetime = Field(description="The latest announcement.")


class OperationCountsView(_Answer):
    """What became of an operation's entity-experiment pairs so far."""

    requested: int = Field(description="Pairs drawn (requested or reused).")
    measured: int = Field(description="Pairs completed, valid or invalid.")
    reused: int = Field(description="Pairs answered from the sample store.")
    failed: int = Field(description="Pairs that failed for good.")
    invalid: int = Field(description="Completed pairs without a valid result (among measured).")
    in_flight: int = Field(description="Pairs requested and not done yet (retries included).")
    cancelled: int = Field(
        default=0,
        description="Pairs still in flight when the operation ended: not waited for, and not "
        "counted as failed (a result that lands later is in the sample store, not in these "
        "counts).",
    )

    @property
    def done(self) -> int:
        return self.measured + self.reused + self.failed


class BestSoFar(_Answer):
    """The best valid result for the operation's objective so far."""

    property: str
    direction: Literal["min", "max"]
    value: float
    entity_id: str
    entity_values: dict[str, Scalar]
    experiment_id: str
    values: dict[str, Scalar] = Field(
        default_factory=dict, description="Every value of that result (the objective's included)."
    )


class OperatorChoice(_Answer):
    """What an operator that settles on one configuration chose (`zeus_bso`: a batch size and
    a power limit), with the costs behind it, as its `OperationCompleted` reported them."""

    values: dict[str, Scalar] = Field(
        default_factory=dict, description="The chosen configuration (empty: nothing chosen)."
    )
    expected_cost: float | None = Field(
        default=None, description="What a run of the choice is expected to cost."
    )
    cost_so_far: float = Field(description="What every run of the operation cost together.")
    recurrence_costs: tuple[float, ...] = Field(
        default=(), description="Each recurrence's cost, in order (its failed runs included)."
    )
    recurrence_phases: tuple[str, ...] = Field(
        default=(), description="The phase each recurrence converged in (pruning, bandit)."
    )


class OperationResult(_Answer):
    """One result an operation received, measured or reused from the store."""

    occurred_at: datetime
    entity_id: str
    entity_values: dict[str, Scalar] = Field(default_factory=dict)
    experiment_id: str
    reused: bool = Field(description="Reused from the sample store rather than measured.")
    is_valid: bool
    values: dict[str, Scalar] = Field(default_factory=dict)


class ChildProgress(_Answer):
    """A pipeline job's child operation, in short: how far it got and how it ended."""

    operation_id: str
    operator: str | None = None
    space_id: str | None = None
    status: OperationStatus
    counts: OperationCountsView
    done: int = Field(description="measured + reused + failed.")
    total: int | None = Field(
        default=None, description="Pairs the child plans to settle; absent when unbounded."
    )
    best: BestSoFar | None = None
    ending: str = Field(default="", description="How it ended: its stop detail or failure reason.")


class PipelineJob(_Answer):
    """One job of a pipeline (or one trial, job `trial-<i>`), from the pipeline's job events
    and its spec: a job not started yet is `pending` (`skipped` once the pipeline ended)."""

    job: str
    stage: str = Field(description="probe, refine, execute, evaluate, or trials.")
    trial: int | None = Field(default=None, description="The trial the job ran in, if any.")
    kind: str | None = Field(
        default=None, description="operation, measure, hook or trial; absent when unknown."
    )
    optional: bool = False
    status: JobStatus = Field(
        description="pending, running, completed, failed, optional-failed (recorded, the "
        "pipeline went on), cancelled (running when the pipeline ended) or skipped (never "
        "started)."
    )
    child_operation_id: str | None = None
    space_id: str | None = Field(default=None, description="The space the job works on.")
    started_at: datetime | None = None
    ended_at: datetime | None = None
    result: dict[str, Any] | None = Field(default=None, description="The job's JSON result.")
    reason: str | None = Field(default=None, description="Why the job failed.")
    child: ChildProgress | None = Field(
        default=None, description="The child operation's progress, once the projector saw it."
    )


class OperationProgress(_Answer):
    """An operation: status, parameters, counts, best so far, and why it stopped."""

    operation_id: str
    parent_operation_id: str | None = Field(
        default=None, description="The pipeline that asked for this operation, if one did."
    )
    space_id: str | None = None
    operator: str | None = None
    status: OperationStatus
    requested_by: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    requested_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    counts: OperationCountsView
    done: int = Field(description="measured + reused + failed.")
    total: int | None = Field(
        default=None,
        description="Pairs the operation plans to settle, at most (a dependent experiment is "
        "skipped where its dependency gave no valid result); once it finished its plan (every "
        "requested entity measured, the space exhausted, the operator done), the pairs it "
        "settled. Absent when unbounded.",
    )
    best: BestSoFar | None = None
    choice: OperatorChoice | None = Field(
        default=None,
        description="What the operator chose, once an operator that settles on one "
        "configuration (zeus_bso) completed; absent otherwise.",
    )
    stop_reason: str | None = None
    stop_detail: str = ""
    failure_reason: str | None = None
    jobs: list[PipelineJob] = Field(
        default_factory=list,
        description="A pipeline's jobs in run order (trials in trial order); empty otherwise.",
    )
