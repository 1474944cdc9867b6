"""Measurement results: valid (values, optional uncertainty) or invalid (a reason).

Pydantic models so that events can carry them as they are; ``MeasurementResult`` is the union,
told apart by ``kind``.
"""

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from discospace.core.spec import Scalar


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _plain(value: object) -> object:
    """A numpy scalar as its Python value (a narrow float as the decimal it prints as)."""
    if type(value).__module__ != "numpy" or not hasattr(value, "item"):
        return value
    if getattr(getattr(value, "dtype", None), "kind", "") == "f" and value.dtype.itemsize < 8:  # type: ignore[attr-defined]
        return float(str(value))
    return value.item()


class ValidMeasurement(_Frozen):
    """Values of the target properties, and optionally their uncertainty (same keys)."""

    kind: Literal["valid"] = "valid"
    values: dict[str, Scalar] = Field(
        min_length=1, examples=[{"train_tokens_per_second": 4210.5, "peak_gpu_memory_mib": 60211}]
    )
    uncertainty: dict[str, float] | None = Field(
        default=None, description="Standard uncertainty of some values, by the same keys."
    )

    @field_validator("values", "uncertainty", mode="before")
    @classmethod
    def _plain_values(cls, values: object) -> object:
        """numpy scalars, which plugins often return, as the Python values they stand for:
        pydantic read `np.bool_(False)` as 0.0, `np.int64(3)` as 3.0, and `np.float32(0.1)`
        as 0.10000000149011612 (a float32 is read as the decimal it prints as)."""
        if not isinstance(values, dict):
            return values
        return {name: _plain(value) for name, value in values.items()}

    @model_validator(mode="after")
    def _uncertainty_matches_values(self) -> "ValidMeasurement":
        for name, spread in (self.uncertainty or {}).items():
            if name not in self.values:
                raise ValueError(f"uncertainty is given for '{name}', which has no value")
            if not math.isfinite(spread) or spread < 0:
                raise ValueError(f"uncertainty of '{name}' must be a finite number >= 0")
        return self

    @property
    def is_valid(self) -> bool:
        return True


class InvalidMeasurement(_Frozen):
    """The configuration was measured but gave no valid result (e.g. out of memory)."""

    kind: Literal["invalid"] = "invalid"
    reason: str = Field(min_length=1, examples=["CUDA out of memory"])

    @property
    def is_valid(self) -> bool:
        return False


MeasurementResult = Annotated[ValidMeasurement | InvalidMeasurement, Field(discriminator="kind")]
"""A valid or an invalid measurement, told apart by ``kind``."""
