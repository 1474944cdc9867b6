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

    http_port: int = Field(
        default=8105, ge=0, le=65535, description="Port of the views, /health and /metrics."
    )
    batch_max_events: int = Field(
        default=1000, ge=1, description="Most events written to the store in one batch."
    )
    batch_linger_s: float = Field(
        default=0.05,
        ge=0,
        description="How long the writer waits for more events before writing a batch.",
    )
    buffer_capacity: int = Field(
        default=20_000,
        ge=1,
        description="Events read and not yet written before the consumer waits for the store.",
    )
