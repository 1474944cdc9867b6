"""Settings of the registry: `DISCOSPACE_REGISTRY_<FIELD>` (see ServiceSettings for shared ones)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from discospace.runtime.settings import ServiceSettings


class RegistrySettings(ServiceSettings):
    """The registry's settings; every field of `ServiceSettings`, prefixed."""

    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_REGISTRY_", extra="ignore")

    service_name: ClassVar[str] = "registry"

    http_port: int = Field(default=8101, ge=0, le=65535, description="Port of /health, /metrics.")
