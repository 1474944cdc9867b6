"""Settings of an actuator worker: `DISCOSPACE_ACTUATOR_<FIELD>` (and the shared ones)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from discospace.runtime.settings import ServiceSettings


def _default_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class ActuatorSettings(ServiceSettings):
    """An actuator worker's settings: which actuator it runs, on which pool, with what catalog."""

    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_ACTUATOR_", extra="ignore")

    service_name: ClassVar[str] = "actuator"

    http_port: int = Field(default=8104, ge=0, le=65535, description="Port of /health, /metrics.")
    actuator: str = Field(
        default="noop", min_length=1, description="The actuator plugin this worker runs."
    )
    pool: str = Field(
        default="default",
        min_length=1,
        description="The GPU pool this worker belongs to: it consumes `<prefix>.measure.<pool>`.",
    )
    catalog_file: Path | None = Field(
        default=None,
        description="YAML or JSON file of the experiments this worker offers (none by default).",
    )
    worker_id: str = Field(
        default_factory=_default_worker_id, description="Names this worker in its announcements."
    )

    @property
    def consumer_group(self) -> str:
        """One consumer group per pool: the pool's workers share its measure topic."""
        return self.group_id or f"{self.topic_prefix}.actuator.{self.pool}"
