"""Operation events: requests from people, and the explorer's decisions.

The explorer's decisions (`OperationStarted`, `SamplesRequested`, `OperationCompleted`,
`OperationFailed`) are events on the operations topic, so a restarted explorer folds them back
and never decides twice. All of them are keyed by operation id.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from discospace.core.sampling import Strategy
from discospace.core.spec import ExperimentRef
from discospace.events.common import NonEmptyStr, OperationEvent, PropertyValues, SpaceId
from discospace.events.envelope import Record, content_id, type_field, version_field
from discospace.events.parameters import OperationParameters
from discospace.events.topics import Topic

StopReason = Literal[
    "requested_entities_measured",
    "space_exhausted",
    "operator_finished",
    "max_measurements",
    "max_duration",
    "max_measurement_time",
    "max_training",
    "no_improvement",
    "target_reached",
    "cancelled",
]
"""Why an operation stopped: its budget, the space, the operator, a stopping rule or a person."""


class OperationRequested(OperationEvent):
    """Someone asked for an operator to run on a registered space.

    The optional `parent_operation_id` (added without a new version) is written only when set.
    """

    TOPIC = Topic.OPERATIONS

    type: Literal["OperationRequested"] = type_field("OperationRequested")
    schema_version: Literal[1] = version_field(1)
    space_id: SpaceId
    operator: NonEmptyStr = Field(
        description="The operator to run: random_walk, grid, zeus, optuna_tpe, pipeline, ...",
        examples=["random_walk"],
    )
    parameters: OperationParameters = Field(
        default_factory=OperationParameters,
        description="Budget, sampling, concurrency, retries, objective and stopping rules.",
        examples=[{"number_entities": 20, "batch_size": 4, "seed": 7}],
    )
    requested_by: NonEmptyStr = Field(
        description="Who asked: a user name or a service.", examples=["alice"]
    )
    parent_operation_id: str | None = Field(
        default=None,
        min_length=1,
        description="The pipeline operation that asked for this one as a job (or a trial); "
        "absent for an operation a person asked for.",
        examples=["op-3f2a9c1d"],
    )

    @model_serializer(mode="wrap")
    def _parent_only_when_set(self, write: SerializerFunctionWrapHandler) -> Any:
        """A request without a parent is written exactly as before the field existed."""
        data = write(self)
        if self.parent_operation_id is None and isinstance(data, dict):
            data.pop("parent_operation_id", None)
        return data


class OperationCancelRequested(OperationEvent):
    """Someone asked for a running operation to stop; measurements in flight still land."""

    TOPIC = Topic.OPERATIONS

    type: Literal["OperationCancelRequested"] = type_field("OperationCancelRequested")
    schema_version: Literal[1] = version_field(1)
    requested_by: NonEmptyStr = Field(
        description="Who asked: a user name or a service.", examples=["alice"]
    )
    reason: str = Field(
        default="",
        description="Why, in the requester's words (may be empty).",
        examples=["wrong sample store"],
    )


class OperationStarted(OperationEvent):
    """The explorer accepted an operation and will run it with these exact parameters."""

    TOPIC = Topic.OPERATIONS

    type: Literal["OperationStarted"] = type_field("OperationStarted")
    schema_version: Literal[1] = version_field(1)
    space_id: SpaceId
    operator: NonEmptyStr = Field(description="The operator that runs.", examples=["random_walk"])
    parameters: OperationParameters = Field(
        description="The parameters in force, with the seed filled in when the request had none, "
        "so the run is reproducible.",
        examples=[{"number_entities": 20, "batch_size": 4, "seed": 7}],
    )


class SamplesRequested(OperationEvent):
    """The explorer asks the sampler for entities: `count` more by a strategy, or `points`.

    With `count`, the sampler draws the next entities of the operation's sequence for
    `strategy` and `seed`, starting at `position`; with `points`, it takes those exactly.
    """

    TOPIC = Topic.OPERATIONS

    type: Literal["SamplesRequested"] = type_field("SamplesRequested")
    schema_version: Literal[1] = version_field(1)
    space_id: SpaceId
    request_index: NonNegativeInt = Field(
        description="0, 1, 2, ... within the operation; ids of the caused events derive from it.",
        examples=[3],
    )
    count: int | None = Field(
        default=None,
        ge=1,
        description="How many entities to draw by `strategy` (absent when `points` is given).",
        examples=[4],
    )
    strategy: Strategy | None = Field(
        default=None,
        description="How to draw: random (seeded, without replacement), sequential (grid "
        "order) or grouped (random groups sharing the `group_by` values).",
        examples=["random"],
    )
    seed: int | None = Field(
        default=None,
        description="Seed of the random and grouped orders (the same seed gives the same order).",
        examples=[7],
    )
    position: NonNegativeInt = Field(
        default=0,
        description="Position in the strategy's sequence of the first entity to draw.",
        examples=[12],
    )
    group_by: tuple[NonEmptyStr, ...] = Field(
        default=(),
        description="Properties whose values stay together with the grouped strategy.",
        examples=[["model_name"]],
    )
    points: tuple[PropertyValues, ...] | None = Field(
        default=None,
        min_length=1,
        description="Explicit entities as property values (absent when `count` is given).",
        examples=[[{"batch_size": 8, "number_gpus": 2}]],
    )
    experiments: tuple[ExperimentRef, ...] = Field(
        min_length=1,
        description="The experiments to run on each entity.",
        examples=[[{"actuator": "SFTTrainer", "experiment": "finetune-full-v1.2.0"}]],
    )
    attempt: int = Field(
        default=1,
        ge=1,
        description="Attempt number the resulting measurements carry; above 1 when the "
        "explorer retries points whose measurement failed transiently.",
        examples=[1],
    )
    inputs: tuple[PropertyValues, ...] = Field(
        default=(),
        description="Observed property values (by observed property id) that the experiments "
        "need for each point, one mapping per point in the order of `points`: what dependent "
        "experiments read from the experiments they depend on. Empty when none is needed.",
        examples=[[{"finetune-full-v1.2.0.train_tokens_per_second": 4210.5}]],
    )
    single_measurement: bool = Field(
        default=True,
        description="Reuse a measurement the sample store already holds for an entity and "
        "experiment instead of measuring it again (the operation's setting).",
        examples=[True],
    )

    @model_validator(mode="after")
    def _count_or_points(self) -> SamplesRequested:
        if (self.count is None) == (self.points is None):
            raise ValueError("give either count (with a strategy) or points, not both or neither")
        if self.count is not None and self.strategy is None:
            raise ValueError("count needs a strategy: random, sequential or grouped")
        if self.inputs and len(self.inputs) != len(self.points or ()):
            raise ValueError("inputs, when given, hold one mapping per point")
        return self

    def fingerprint(self) -> str:
        """What the request asks for (every field but `occurred_at`), as a short stable hash.

        The id of a request derives from its operation's start and its `request_index`, so two
        explorer replicas deciding for the same index give the same id; different fingerprints
        say they decided differently. Every reader keeps the first of them in the log.
        """
        asked = self.model_dump(mode="json", exclude={"occurred_at"})
        return content_id(json.dumps(asked, sort_keys=True, separators=(",", ":")))


class SamplesDrawn(OperationEvent):
    """The sampler's answer to one `SamplesRequested`: which entities it drew.

    Fewer than requested, with `exhausted`, when the space (or the points) ran out; each drawn
    entity then gets a `MeasurementRequested` or a `MeasurementReused` per experiment.
    """

    TOPIC = Topic.OPERATIONS

    type: Literal["SamplesDrawn"] = type_field("SamplesDrawn")
    schema_version: Literal[1] = version_field(1)
    request_index: NonNegativeInt = Field(
        description="The `request_index` of the request answered.", examples=[3]
    )
    entity_ids: tuple[str, ...] = Field(
        description="Canonical ids of the entities drawn, in drawing order.",
        examples=[["9f86d081884c7d65", "2c26b46b68ffc68f"]],
    )
    next_position: NonNegativeInt = Field(
        description="Position in the strategy's sequence after the last entity drawn.",
        examples=[14],
    )
    exhausted: bool = Field(
        description="True when the sequence has no entity left after these.", examples=[False]
    )
    rejected_points: tuple[str, ...] = Field(
        default=(),
        description="Explicit points that were not drawn, each with the reason.",
        examples=[["batch_size=3: 3 is not in the domain of batch_size"]],
    )


class OperationCounts(Record):
    """How many measurements an operation asked for, and what became of them."""

    requested: NonNegativeInt = Field(
        description="Entity-experiment pairs the sampler drew for this operation.", examples=[20]
    )
    measured: NonNegativeInt = Field(
        description="Measurements completed for this operation, valid or invalid.", examples=[15]
    )
    reused: NonNegativeInt = Field(
        description="Pairs answered from the shared sample store without measuring.", examples=[3]
    )
    failed: NonNegativeInt = Field(
        description="Pairs whose measurement failed for good (retries spent or not retryable).",
        examples=[1],
    )
    invalid: NonNegativeInt = Field(
        description="Completed measurements that gave no valid result (among `measured`).",
        examples=[2],
    )


class OperatorChoice(Record):
    """What an operator that settles on one configuration chose by the end (`zeus_bso`: the
    batch size and power limit to run the recurring job with from now on), and the costs behind
    it, in the operator's unit (`zeus_bso`: J, `eta * energy + (1 - eta) * max_power * time`)."""

    values: PropertyValues = Field(
        description="The chosen configuration: values of some of the space's properties "
        "(empty when nothing could be chosen yet, e.g. no run converged).",
        examples=[{"batch_size": 128, "power_limit": 175}],
    )
    expected_cost: float | None = Field(
        default=None,
        description="What a run of the choice is expected to cost (`zeus_bso`: the posterior "
        "mean of the bandit for that batch size); absent when it cannot be told.",
        examples=[41234.5],
    )
    cost_so_far: NonNegativeFloat = Field(
        description="What every run of the operation cost together (runs that did not converge "
        "or were stopped early included).",
        examples=[123456.0],
    )
    recurrence_costs: tuple[NonNegativeFloat, ...] = Field(
        default=(),
        description="The cost of each recurrence of the job in order: every run it took until "
        "one reached the target.",
        examples=[[50000.0, 41000.0, 32456.0]],
    )
    recurrence_phases: tuple[NonEmptyStr, ...] = Field(
        default=(),
        description="The optimizer's phase when each recurrence reached the target, one per "
        "entry of `recurrence_costs` (`zeus_bso`: pruning, then bandit).",
        examples=[["pruning", "pruning", "bandit"]],
    )

    @model_validator(mode="after")
    def _one_phase_per_cost(self) -> OperatorChoice:
        if len(self.recurrence_phases) != len(self.recurrence_costs):
            raise ValueError("a choice names one phase per recurrence cost")
        return self


class OperationCompleted(OperationEvent):
    """The operation stopped normally; the best entity found for the objective, if any.

    The optional `choice` (added without a new version) is written only when set: a completion
    without one is written exactly as before it existed.
    """

    TOPIC = Topic.OPERATIONS

    type: Literal["OperationCompleted"] = type_field("OperationCompleted")
    schema_version: Literal[1] = version_field(1)
    space_id: SpaceId
    stop_reason: StopReason = Field(
        description="Why it stopped.", examples=["requested_entities_measured"]
    )
    stop_detail: str = Field(
        default="",
        description="The stop reason in a sentence, with the figures behind it.",
        examples=["20 of 20 requested entities measured"],
    )
    best_entity_id: str | None = Field(
        default=None,
        description="The entity with the best objective value among valid measurements; "
        "absent without an objective or a valid measurement.",
        examples=["9f86d081884c7d65"],
    )
    best_entity_values: PropertyValues | None = Field(
        default=None,
        description="Constitutive property values of the best entity.",
        examples=[{"batch_size": 8, "number_gpus": 2}],
    )
    best_values: PropertyValues | None = Field(
        default=None,
        description="Measured values of the best entity, the objective's property included.",
        examples=[{"train_tokens_per_second": 4210.5}],
    )
    counts: OperationCounts = Field(
        description="What became of the requested measurements.",
        examples=[{"requested": 20, "measured": 15, "reused": 3, "failed": 1, "invalid": 2}],
    )
    choice: OperatorChoice | None = Field(
        default=None,
        description="What the operator chose, for an operator that settles on one "
        "configuration (`zeus_bso`); absent for the others.",
        examples=[
            {
                "values": {"batch_size": 128, "power_limit": 175},
                "expected_cost": 41234.5,
                "cost_so_far": 123456.0,
                "recurrence_costs": [50000.0, 41000.0, 32456.0],
                "recurrence_phases": ["pruning", "pruning", "bandit"],
            }
        ],
    )

    @model_serializer(mode="wrap")
    def _choice_only_when_set(self, write: SerializerFunctionWrapHandler) -> Any:
        data = write(self)
        if self.choice is None and isinstance(data, dict):
            data.pop("choice", None)
        return data


class OperationFailed(OperationEvent):
    """The operation could not go on (unknown space or operator, bad parameters, ...)."""

    TOPIC = Topic.OPERATIONS

    type: Literal["OperationFailed"] = type_field("OperationFailed")
    schema_version: Literal[1] = version_field(1)
    reason: NonEmptyStr = Field(
        description="Why, in one sentence a person can act on.",
        examples=["space 'space-5e1d0c9b7a24' is not registered"],
    )
    counts: OperationCounts | None = Field(
        default=None,
        description="What became of the measurements requested before it failed, if any.",
        examples=[{"requested": 4, "measured": 2, "reused": 0, "failed": 2, "invalid": 0}],
    )
