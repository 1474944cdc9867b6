"""The replay actuator's configuration: a YAML file (or the same fields inline as parameters).

Two modes, one per file:

- `table`: serve measurements from a published table (CSV or Parquet): which columns are the
  constitutive properties (renamed, values mapped), which are the targets, when a row is an
  invalid result, how to serve several rows of one configuration, an optional simulated
  duration;
- `zeus`: the `train_to_target` experiment over the Zeus NSDI'23 traces.

Paths are relative to the config file (to the working directory for inline parameters) and may
use `${VAR}` environment variables; `${DISCOSPACE_DATA_DIR}` falls back to the shared data folder
beside the repository. Every mistake is one `SpecError` sentence naming the file and the field.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from discospace.core.errors import SpecError
from discospace.core.loading import parse_document, read_document, validate_document
from discospace.core.spec import NonEmptyStr, Scalar
from discospace.traces.data import DATA_DIR_ENV, data_dir


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def _named(value: Any, key: str) -> Any:
    """A bare string stands for `{key: string}` (`- train_runtime` for `- {column: ...}`)."""
    return {key: value} if isinstance(value, str) else value


class ReplayExperiment(_Frozen):
    """One experiment the table serves (all of them read the same table)."""

    experiment: NonEmptyStr = Field(examples=["fms-a100-finetune"])
    description: str = "Replays a published measurement table."


class ColumnProperty(_Frozen):
    """A column that holds a constitutive property of the entity."""

    column: NonEmptyStr = Field(examples=["per_device_train_batch_size"])
    name: NonEmptyStr | None = Field(default=None, description="Property name; the column's.")
    values: dict[Scalar, Scalar] = Field(
        default_factory=dict,
        description="Table value -> property value; an empty cell is the value ''.",
        examples=[{"": "none"}],
    )
    default: Scalar | None = Field(
        default=None, description="Makes it an optional property of the experiments."
    )

    @property
    def property_name(self) -> str:
        return self.name or self.column


class TargetColumn(_Frozen):
    """A column that holds a target property; a row with an empty cell in it is an invalid
    result (a valid one holds every target), unless an `invalid_when` rule says why first."""

    column: NonEmptyStr = Field(examples=["train_tokens_per_second"])
    name: NonEmptyStr | None = Field(default=None, description="Property name; the column's.")
    scale: float = Field(default=1.0, description="Multiplies the value (e.g. bytes to MiB).")

    @property
    def property_name(self) -> str:
        return self.name or self.column


class MissingRule(_Frozen):
    """A row is an invalid result when any of these columns is empty."""

    missing: tuple[NonEmptyStr, ...] = Field(min_length=1, examples=[["train_tokens_per_second"]])
    reason: NonEmptyStr = Field(default="no valid result", examples=["out of memory"])

    @field_validator("missing", mode="before")
    @classmethod
    def _one_column(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class Duration(_Frozen):
    """Each measurement takes `column * scale` seconds (an empty cell: no wait)."""

    column: NonEmptyStr = Field(examples=["train_runtime"])
    scale: float = Field(default=1.0, ge=0, examples=[0.001])


Repeats = Literal["cycle", "random"]


class TableReplay(_Frozen):
    """Serve measurements from the rows of a table."""

    file: NonEmptyStr = Field(examples=["${DISCOSPACE_DATA_DIR}/fms-acceleration-a100/a.csv"])
    format: Literal["csv", "parquet"] | None = Field(
        default=None, description="Read from the file's suffix when left out."
    )
    experiments: tuple[ReplayExperiment, ...] = Field(min_length=1)
    properties: tuple[ColumnProperty, ...] = Field(min_length=1)
    targets: tuple[TargetColumn, ...] = Field(min_length=1)
    invalid_when: tuple[MissingRule, ...] = ()
    repeats: Repeats = Field(
        default="cycle",
        description="Several rows of one configuration are repeated runs: `cycle` serves them "
        "in turn from a seeded start, `random` draws one per measurement (seeded).",
    )
    duration: Duration | None = None

    @field_validator("experiments", mode="before")
    @classmethod
    def _experiment_names(cls, value: Any) -> Any:
        return [_named(item, "experiment") for item in value] if isinstance(value, list) else value

    @field_validator("properties", "targets", mode="before")
    @classmethod
    def _column_names(cls, value: Any) -> Any:
        return [_named(item, "column") for item in value] if isinstance(value, list) else value

    @field_validator("invalid_when", mode="before")
    @classmethod
    def _one_rule(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _distinct_names(self) -> TableReplay:
        for kind, names in (
            ("properties", [p.property_name for p in self.properties]),
            ("targets", [t.property_name for t in self.targets]),
        ):
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:
                raise ValueError(f"{kind} name '{repeated[0]}' more than once")
        return self


Gpu = Literal["v100", "a40"]


class ZeusReplay(_Frozen):
    """The `train_to_target` experiment over the Zeus NSDI'23 traces."""

    experiment: NonEmptyStr = "train_to_target"
    description: str = (
        "Trains a workload to its target metric at (batch size, power limit) on a GPU: one seeded "
        "run of the Zeus NSDI'23 train trace, costed with the power trace. Run controls (0: not "
        "asked for): cost_limit stops the run before the epoch that would pass it, profile_power "
        "1 profiles every power limit in the first epoch and trains at the cheapest "
        "(trained_power_limit), max_epochs caps an unconverged run (0: the job's)."
    )
    folder: NonEmptyStr = Field(
        default="${DISCOSPACE_DATA_DIR}/zeus-nsdi23-trace", description="The Zeus trace folder."
    )
    gpus: tuple[Gpu, ...] = Field(default=("v100", "a40"), min_length=1)
    gpu_property: NonEmptyStr = Field(default="gpu", description="Entity property naming the GPU.")
    eta: float = Field(
        default=0.5, ge=0, le=1, description="Default of the optional property `eta`."
    )
    duration_scale: float | None = Field(
        default=None, ge=0, description="Sleep time_to_accuracy * scale seconds per measurement."
    )


class ReplayConfig(_Frozen):
    """A replay config file: one mode (`table` or `zeus`) and the seed of repeated runs."""

    table: TableReplay | None = None
    zeus: ZeusReplay | None = None
    seed: int = Field(default=0, description="Seeds which run serves a measurement.")

    @model_validator(mode="after")
    def _one_mode(self) -> ReplayConfig:
        if (self.table is None) == (self.zeus is None):
            raise ValueError("give exactly one of `table` and `zeus`")
        return self


class ReplayParameters(_Frozen):
    """What `DISCOSPACE_ACTUATOR_PARAMETERS` may set: a config file, or its fields inline."""

    config: Path | None = Field(default=None, description="A replay config file (YAML/JSON).")
    table: TableReplay | None = None
    zeus: ZeusReplay | None = None
    seed: int | None = Field(default=None, description="Overrides the config's seed.")

    @model_validator(mode="after")
    def _one_source(self) -> ReplayParameters:
        inline = self.table is not None or self.zeus is not None
        if self.config is not None and inline:
            raise ValueError("give either `config` (a file) or `table`/`zeus` inline, not both")
        if self.config is None and self.table is None and self.zeus is None:
            raise ValueError("give `config` (a replay config file), or `table` or `zeus` inline")
        if self.table is not None and self.zeus is not None:
            raise ValueError("give exactly one of `table` and `zeus`")
        return self

    def resolve(self) -> tuple[ReplayConfig, Path]:
        """The config, and the folder its relative paths start from."""
        if self.config is None:
            config = ReplayConfig(table=self.table, zeus=self.zeus, seed=self.seed or 0)
            return config, Path.cwd()
        config = load_config(self.config)
        if self.seed is not None:
            config = config.model_copy(update={"seed": self.seed})
        return config, self.config.resolve().parent


def load_config(path: Path) -> ReplayConfig:
    """The replay config in `path`; `SpecError` names the file and the field at fault."""
    return validate_document(
        parse_document(read_document(path), str(path)), ReplayConfig, str(path)
    )


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resolve_path(raw: str, base: Path, field: str) -> Path:
    """`raw` with `${VAR}` expanded, relative to `base` unless absolute."""

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in os.environ:
            return os.environ[name]
        if name == DATA_DIR_ENV:
            return str(data_dir())
        raise SpecError(f"{field}: the environment variable {name} in '{raw}' is not set")

    path = Path(_VARIABLE.sub(expand, raw)).expanduser()
    return path if path.is_absolute() else base / path
