"""Settings of an actuator worker: `DISCOSPACE_ACTUATOR_<FIELD>` (and the shared ones)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from discospace.core.errors import SpecError
from discospace.core.loading import parse_document
from discospace.runtime.settings import ServiceSettings


def _default_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


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
        description="Measurements this worker runs at once (one consumer of the pool's group "
        "each, so at most the measure topic's partition count).",
    )
    worker_id: str = Field(
        default_factory=_default_worker_id, description="Names this worker in its announcements."
    )

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
        try:
            text = self.parameters_file.read_text(encoding="utf-8")
        except OSError as error:
            raise SpecError(f"{path}: cannot be read ({error.strerror or error})") from None
        loaded = parse_document(text, path)
        if not isinstance(loaded, dict):
            raise SpecError(f"{path}: the actuator's parameters must be a mapping")
        return {**loaded, **self.parameters}
