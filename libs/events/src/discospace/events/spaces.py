"""Space events: a person submits a discovery space, the registry registers or rejects it.

The registry answers on the compacted spaces topic. A registration is keyed by space id, so
the topic keeps every registered space; a rejection is keyed by its submission, so it can
never replace a registration of the same space in the compacted log.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from discospace.core.spec import ExperimentSpec, SpaceSpec
from discospace.events.common import NonEmptyStr, SpaceId
from discospace.events.envelope import Event, type_field, version_field
from discospace.events.topics import Topic, rejection_key, space_key, submission_key

SubmissionId = Annotated[
    str,
    Field(
        min_length=1,
        description="Id the submitter gave this submission; the answer carries it back.",
        examples=["sub-7c41e2"],
    ),
]


class _SpaceEvent(Event):
    """A space event: correlated by its submission."""

    submission_id: SubmissionId

    @model_validator(mode="after")
    def _correlate_with_submission(self) -> Self:
        return self._correlated_with(self.submission_id)


class SpaceSubmitted(_SpaceEvent):
    """Someone asked for a discovery space to be registered."""

    TOPIC = Topic.SPACE_SUBMISSIONS

    type: Literal["SpaceSubmitted"] = type_field("SpaceSubmitted")
    schema_version: Literal[1] = version_field(1)
    spec: SpaceSpec = Field(
        description="The space as written: sample store, entity space and measurement space.",
        examples=[
            {
                "sample_store": "fms-a100",
                "entity_space": [
                    {"name": "batch_size", "values": [1, 2, 4, 8]},
                    {"name": "number_gpus", "values": [1, 2, 4]},
                ],
                "measurement_space": [
                    {"actuator": "SFTTrainer", "experiment": "finetune-full-v1.2.0"},
                ],
            }
        ],
    )
    submitted_by: NonEmptyStr = Field(
        description="Who submitted it: a user name or a service.", examples=["alice"]
    )

    def key(self) -> bytes:
        return submission_key(self.submission_id)


class SpaceRegistered(_SpaceEvent):
    """The registry accepted a space: every experiment is known and its requirements are met."""

    TOPIC = Topic.SPACES

    type: Literal["SpaceRegistered"] = type_field("SpaceRegistered")
    schema_version: Literal[1] = version_field(1)
    space_id: SpaceId
    spec: SpaceSpec = Field(
        description="The registered space, in canonical form.",
        examples=SpaceSubmitted.model_fields["spec"].examples,
    )
    experiments: tuple[ExperimentSpec, ...] = Field(
        description="The catalog entries the measurement space resolved to, one per experiment.",
        examples=[
            [
                {
                    "actuator": "SFTTrainer",
                    "experiment": "finetune-full-v1.2.0",
                    "target_properties": ["train_tokens_per_second", "peak_gpu_memory_mib"],
                    "required_properties": ["batch_size", "number_gpus"],
                }
            ]
        ],
    )

    def key(self) -> bytes:
        return space_key(self.space_id)


class SpaceRejected(_SpaceEvent):
    """The registry refused a submitted space, with a reason the submitter can act on."""

    TOPIC = Topic.SPACES

    type: Literal["SpaceRejected"] = type_field("SpaceRejected")
    schema_version: Literal[1] = version_field(1)
    space_id: str | None = Field(
        default=None,
        description="Id of the space, when the spec was well formed enough to compute one.",
        examples=["space-5e1d0c9b7a24"],
    )
    reason: NonEmptyStr = Field(
        description="Why it was refused, in one sentence a person can act on.",
        examples=[
            "experiment 'finetune-full-v1.2.0' of actuator 'SFTTrainer' is not in the catalog"
        ],
    )

    def key(self) -> bytes:
        return rejection_key(self.submission_id)
