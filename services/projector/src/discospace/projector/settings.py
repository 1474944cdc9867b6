"""Settings of the projector: `DISCOSPACE_PROJECTOR_<FIELD>` (and the shared ones).

Where the store is comes from the store's own settings: `CLICKHOUSE_URL` for a server or
cluster, else embedded chDB in `DISCOSPACE_STORE_DATA_DIR` (default `.run/store`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from discospace.runtime.settings import ServiceSettings


class ProjectorSettings(ServiceSettings):
    """The projector's settings; every field of `ServiceSettings`, prefixed."""

    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_PROJECTOR_", extra="ignore")

    service_name: ClassVar[str] = "projector"

    http_port: int = Field(default=8105, ge=0, le=65535, description="Port of /health, /metrics.")
