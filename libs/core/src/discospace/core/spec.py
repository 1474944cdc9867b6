"""File models: the exact shape of space and experiment files (YAML or JSON).

These models check structure only (field names, types); whether a domain is well formed, or a
measurement space is consistent, is decided by the domain classes built from them (see
``property_domains.py``, ``discovery.py``), so that an event can carry any structurally valid
spec and the registry can answer with a readable rejection.

Sequences are tuples so a loaded spec is immutable; lists are accepted on input.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

Scalar = StrictBool | StrictInt | StrictFloat | StrictStr
"""A property value: a string, a whole number, a real number or a boolean (kept as written)."""

Number = StrictInt | StrictFloat

DomainType = Literal["categorical", "discrete", "continuous", "identifier"]

NonEmptyStr = Annotated[str, Field(min_length=1)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class ProbabilitySpec(_Frozen):
    """How values of a property are distributed when drawn: uniform (default) or normal."""

    name: Literal["uniform", "normal"] = "uniform"
    mean: Number | None = Field(default=None, description="Mean of a normal distribution.")
    std: Number | None = Field(default=None, description="Standard deviation of a normal one.")


class PropertySpec(_Frozen):
    """One constitutive property of an entity space and its domain.

    The type is inferred when omitted: numeric values give discrete, other values categorical,
    a range with an interval discrete, a range with a bound written as a real number (``0.0``,
    ``1e-3``) continuous. A range of two whole numbers without an interval is refused: write
    ``interval`` or ``type: continuous``.
    """

    name: NonEmptyStr = Field(examples=["batch_size"])
    type: DomainType | None = Field(default=None, description="Inferred when omitted.")
    values: tuple[Scalar, ...] | None = Field(default=None, examples=[[1, 2, 4, 8]])
    range: tuple[Number, Number] | None = Field(
        default=None, description="[low, high]; high is excluded for discrete domains."
    )
    interval: Number | None = Field(default=None, description="Step of a discrete range.")
    probability: ProbabilitySpec | None = None


class ExperimentRef(_Frozen):
    """A reference, inside a measurement space, to an experiment offered by an actuator."""

    actuator: NonEmptyStr = Field(examples=["SFTTrainer"])
    experiment: NonEmptyStr = Field(examples=["finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0"])
    parameterization: dict[str, Scalar] = Field(
        default_factory=dict, description="Overrides of the experiment's optional properties."
    )


class SpaceSpec(_Frozen):
    """A discovery space file: entity space, measurement space and the sample store it uses."""

    sample_store: NonEmptyStr = Field(examples=["2351e8"])
    entity_space: tuple[PropertySpec, ...]
    measurement_space: tuple[ExperimentRef, ...]


class ExperimentSpec(_Frozen):
    """One catalog entry offered by an actuator.

    ``required_properties`` holds constitutive property names, or observed property ids
    (``<parameterized experiment id>.<target>``) of other experiments for dependent experiments.
    """

    actuator: NonEmptyStr = Field(examples=["SFTTrainer"])
    experiment: NonEmptyStr = Field(examples=["finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0"])
    description: str = ""
    target_properties: tuple[NonEmptyStr, ...] = Field(examples=[["train_tokens_per_second"]])
    required_properties: tuple[NonEmptyStr, ...] = ()
    optional_properties: dict[str, Scalar] = Field(
        default_factory=dict, description="Optional properties and their default values."
    )
