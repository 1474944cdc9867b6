"""Settings of an actuator worker: `DISCOSPACE_ACTUATOR_<FIELD>` (and the shared ones)."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from discospace.core import Time
from discospace.core.errors import SpecError, TimeError
from discospace.core.loading import parse_document, read_document
from discospace.runtime.settings import ServiceSettings, blank_is_unset

POLL_MARGIN_S = 120
"""Slack between the measurement timeout and Kafka's max poll interval, so a measurement that
runs up to its timeout never costs its consumer the partition."""

MAX_CONCURRENCY = 256
"""The most consumers one worker runs: each is a Kafka connection and a group member, and one
without a partition of the measure topic stays idle; 10^5 of them would only storm the broker
and the group's rebalances."""

_MINUTES = re.compile(r"^\s*(\d+)\s*min\s*$", re.IGNORECASE)


def _default_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def parse_timeout(value: object) -> Time:
    """A positive time in seconds: `30sec`, `1h20m40s`, `10m` or `10min`.

    Raises `TimeError` (one sentence) for another unit or a time that is not above zero.
    """
    if isinstance(value, str) and (minutes := _MINUTES.match(value)):
        value = Time(int(minutes[1]) * 60, "sec")
    try:
        timeout = value if isinstance(value, Time) else Time.parse(str(value))
        seconds = timeout.to("sec")
    except TimeError:
        raise TimeError(
            f"a measurement timeout is a duration like 30sec or 10min, not '{value}'"
        ) from None
    if seconds.value <= 0:
        raise TimeError(f"a measurement timeout must be above zero, not {timeout}")
    return seconds


MAX_MEMORY_LIMIT_MB = (2**63 - 1) // 2**20
"""The largest `memory_limit_mb` whose bytes fit RLIMIT_AS (a C long)."""


class ActuatorSettings(ServiceSettings):
    """An actuator worker's settings: which plugin it runs, with what parameters, on which pool."""

    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_ACTUATOR_", extra="ignore")

    service_name: ClassVar[str] = "actuator"

    http_port: int = Field(default=8104, ge=0, le=65535, description="Port of /health, /metrics.")
    actuator: str = Field(
        default="synthetic",
        min_length=1,
        description="The actuator plugin this worker runs: a name of the `discospace.actuators` "
        "entry-point group.",
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        description='The plugin\'s parameters as JSON (`{"latency_s": 0.5}`); they override '
        "those of `parameters_file`.",
    )
    parameters_file: Path | None = Field(
        default=None, description="YAML or JSON file of the plugin's parameters."
    )
    pool: str = Field(
        default="default",
        min_length=1,
        description="The GPU pool this worker belongs to: it consumes `<prefix>.measure.<pool>`.",
    )
    gpu_model: str | None = Field(
        default=None,
        description="The GPU model of the pool's machines, when it serves one model: entities "
        "with a `gpu_model` property are routed to pools of their model.",
    )
    concurrency: int = Field(
        default=1,
        ge=1,
        le=MAX_CONCURRENCY,
        description="Measurements this worker runs at once (one consumer of the pool's group "
        "each, so at most the measure topic's partition count).",
    )
    worker_id: str = Field(
        default_factory=_default_worker_id,
        min_length=1,
        description="Names this worker in its announcements and measurements.",
    )
    timeout: Annotated[Time, NoDecode] = Field(
        default=Time(3600, "sec"),
        description="How long one measurement may run (`30sec`, `10min`, `1h20m`); past it, "
        "the measurement is stopped and fails retryably ('timed out after 30sec').",
    )
    memory_limit_mb: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MEMORY_LIMIT_MB,
        description="Address space an isolated measurement's child process may use (RLIMIT_AS); "
        "over it, the measurement is invalid, 'out of memory'. None: no limit.",
    )

    @field_validator("parameters_file", "gpu_model", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """A blank value (`GPU_MODEL: ${GPU_MODEL:-}` in a compose file) is no value: a pool
        announced the model '' and then served no entity with a `gpu_model` property."""
        return blank_is_unset(value)

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_in_seconds(cls, value: object) -> Time:
        return parse_timeout(value)

    @property
    def max_poll_interval_ms(self) -> int:
        """Kafka's max poll interval for the pool's consumers: longer than any measurement."""
        return (int(self.timeout.value) + POLL_MARGIN_S) * 1000

    @property
    def consumer_group(self) -> str:
        """One consumer group per pool: the pool's workers share its measure topic."""
        return self.group_id or f"{self.topic_prefix}.actuator.{self.pool}"

    def plugin_parameters(self) -> dict[str, Any]:
        """The parameters of `parameters_file`, overridden by `parameters`.

        Raises `SpecError` (one sentence) when the file cannot be read or holds no mapping.
        """
        if self.parameters_file is None:
            return dict(self.parameters)
        path = str(self.parameters_file)
        loaded = parse_document(read_document(self.parameters_file), path)
        if not isinstance(loaded, dict):
            raise SpecError(f"{path}: the actuator's parameters must be a mapping")
        return {**loaded, **self.parameters}
