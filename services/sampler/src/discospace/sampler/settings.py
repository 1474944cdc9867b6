"""Settings of the sampler: `DISCOSPACE_SAMPLER_<FIELD>` (see ServiceSettings for shared ones)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from discospace.runtime.settings import ServiceSettings


class SamplerSettings(ServiceSettings):
    """The sampler's settings; every field of `ServiceSettings`, prefixed."""

    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_SAMPLER_", extra="ignore")

    service_name: ClassVar[str] = "sampler"

    http_port: int = Field(default=8103, ge=0, le=65535, description="Port of /health, /metrics.")
    space_wait_s: float = Field(
        default=10.0,
        ge=0,
        description="How long a request for a space not read yet waits for its registration "
        "before it is handed back (and delivered again after `retry_backoff_s`).",
    )
    in_flight_wait_s: float = Field(
        default=60.0,
        ge=0,
        description="How long a request whose pairs wait for measurements already in flight "
        "(for another request) waits before those pairs are sent to a pool anyway: the bound "
        "on how long its offset is held uncommitted (other requests are answered meanwhile).",
    )
    first_request_wait_s: float = Field(
        default=10.0,
        ge=0,
        description="How long a request waits for the follower of the operations "
        "topic to read it (to know the first request of its operation and index); after it, "
        "the request counts as the first unless another was recorded meanwhile.",
    )
