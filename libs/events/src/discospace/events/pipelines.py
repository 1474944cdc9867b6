"""Pipeline events: the explorer's decisions about the jobs of a pipeline operation.

A pipeline (`operator: pipeline`) runs its stages' jobs in order; each job's start, result
or failure is an event on the pipeline's operation, so a restarted explorer folds them back,
never reruns a finished job, and every view can show the jobs and their results.

- `PipelineJobStarted`: a job (or a trial, job `trial-<i>`) began, with the child operation
  it asked for, if any.
- `PipelineJobCompleted`: the job's result, which later jobs read by the job's name.
- `PipelineJobFailed`: why it failed, and whether it was optional (the pipeline goes on).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, NonNegativeInt

from discospace.events.common import NonEmptyStr, OperationEvent
from discospace.events.envelope import type_field, version_field
from discospace.events.topics import Topic

JobName = Annotated[
    str,
    Field(
        min_length=1,
        description="The job's name, unique in its pipeline (`trial-<i>` for a trial).",
        examples=["narrowed"],
    ),
]
StageName = Annotated[
    str,
    Field(
        min_length=1,
        description="The stage the job belongs to: probe, refine, execute or evaluate "
        "(trials for a trial).",
        examples=["refine"],
    ),
]
TrialNumber = Annotated[
    NonNegativeInt | None,
    Field(
        description="The trial (0, 1, ...) this job runs in; absent outside trials.",
        examples=[None, 2],
    ),
]


class PipelineJobStarted(OperationEvent):
    """The pipeline began one of its jobs."""

    TOPIC = Topic.OPERATIONS

    type: Literal["PipelineJobStarted"] = type_field("PipelineJobStarted")
    schema_version: Literal[1] = version_field(1)
    job: JobName
    stage: StageName
    trial: TrialNumber = None
    child_operation_id: str | None = Field(
        default=None,
        min_length=1,
        description="The child operation this job asked for (an operation, measure or trial "
        "job); absent for a hook.",
        examples=["op-3f2a9c1d-probe-1a2b3c4d"],
    )
    space_id: str | None = Field(
        default=None,
        min_length=1,
        description="The space the job works on; absent when it is not known yet.",
        examples=["space-5e1d0c9b7a24"],
    )


class PipelineJobCompleted(OperationEvent):
    """A job of the pipeline finished; later jobs read its result by the job's name."""

    TOPIC = Topic.OPERATIONS

    type: Literal["PipelineJobCompleted"] = type_field("PipelineJobCompleted")
    schema_version: Literal[1] = version_field(1)
    job: JobName
    stage: StageName
    trial: TrialNumber = None
    result: dict[str, JsonValue] = Field(
        description="What the job gave: a child operation's outcome, a hook's result (a "
        "refined space with its `space_id`, entities, parameters), as JSON.",
        examples=[{"space_id": "space-77aa01c2e3f4", "narrowed": {"batch_size": [4, 16]}}],
    )


class PipelineJobFailed(OperationEvent):
    """A job of the pipeline failed; the pipeline fails too unless the job is optional."""

    TOPIC = Topic.OPERATIONS

    type: Literal["PipelineJobFailed"] = type_field("PipelineJobFailed")
    schema_version: Literal[1] = version_field(1)
    job: JobName
    stage: StageName
    trial: TrialNumber = None
    reason: NonEmptyStr = Field(
        description="Why, in one sentence a person can act on.",
        examples=["hook 'k_sigma' found no valid row of job 'probe'"],
    )
    optional: bool = Field(
        description="Whether the job was optional: the failure is recorded and the pipeline "
        "goes on.",
        examples=[False],
    )
