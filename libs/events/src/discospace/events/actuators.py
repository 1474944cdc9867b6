"""Actuator events: a worker announces, at start, the experiments its pool can run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from discospace.core.spec import ExperimentSpec
from discospace.events.common import NonEmptyStr
from discospace.events.envelope import Event, type_field, version_field
from discospace.events.topics import POOL_PATTERN, Topic, actuator_key, validate_pool


class ActuatorRegistered(Event):
    """An actuator worker started and offers these experiments on its pool.

    Every worker of a pool announces the same catalog under the same key, so the compacted
    actuators topic keeps the latest catalog per actuator and pool.
    """

    TOPIC = Topic.ACTUATORS

    type: Literal["ActuatorRegistered"] = type_field("ActuatorRegistered")
    schema_version: Literal[1] = version_field(1)
    actuator: NonEmptyStr = Field(
        description="Name of the actuator plugin; experiments are referred to through it.",
        examples=["SFTTrainer"],
    )
    pool: NonEmptyStr = Field(
        description="The GPU pool the worker serves; it consumes the measure topic of this pool.",
        examples=["a100-80gb"],
        json_schema_extra={"pattern": POOL_PATTERN},
    )
    experiments: tuple[ExperimentSpec, ...] = Field(
        description="The catalog: every experiment this actuator offers on this pool.",
        examples=[
            [
                {
                    "actuator": "SFTTrainer",
                    "experiment": "finetune-full-v1.2.0",
                    "description": "Full fine-tuning throughput and memory.",
                    "target_properties": ["train_tokens_per_second", "peak_gpu_memory_mib"],
                    "required_properties": ["model_name", "batch_size", "number_gpus"],
                    "optional_properties": {"max_steps": 5},
                }
            ]
        ],
    )
    gpu_model: str | None = Field(
        default=None,
        description="The GPU model the pool's machines carry, when the pool serves one model.",
        examples=["NVIDIA-A100-80GB-PCIe"],
    )
    worker_id: NonEmptyStr = Field(
        description="The worker that made the announcement.", examples=["a100-80gb-worker-0"]
    )

    @field_validator("pool")
    @classmethod
    def _pool_names_a_topic(cls, pool: str) -> str:
        return validate_pool(pool)

    @model_validator(mode="after")
    def _experiments_belong_to_the_actuator(self) -> ActuatorRegistered:
        for spec in self.experiments:
            if spec.actuator != self.actuator:
                raise ValueError(
                    f"experiment {spec.experiment!r} belongs to actuator {spec.actuator!r}, "
                    f"not {self.actuator!r}"
                )
        return self

    def key(self) -> bytes:
        return actuator_key(self.actuator, self.pool)
