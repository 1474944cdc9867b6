"""Settings of the projector: `DISCOSPACE_PROJECTOR_<FIELD>` (and the shared ones).

Where the store is comes from the store's own settings: `CLICKHOUSE_URL` for a server or
cluster, else embedded chDB in `DISCOSPACE_STORE_DATA_DIR` (default `.run/store`).

Who may read the views (`access.py`): the HTTP API listens on 127.0.0.1 unless `http_host`
says otherwise; with `api_token` (or `api_token_file`) every view asks for
`Authorization: Bearer <token>` (/health and /metrics never do). Listening on any other address
without a token is refused at start, unless `allow_unauthenticated` says it is meant.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from discospace.runtime.settings import ServiceSettings, blank_is_unset


class ProjectorSettings(ServiceSettings):
    """The projector's settings; every field of `ServiceSettings`, prefixed."""

    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_PROJECTOR_", extra="ignore")

    service_name: ClassVar[str] = "projector"

    http_port: int = Field(
        default=8105, ge=0, le=65535, description="Port of the views, /health and /metrics."
    )
    batch_max_events: int = Field(
        default=5000,
        ge=1,
        description="Events that make the writer write at once (and the most in one batch).",
    )
    batch_linger_s: float = Field(
        default=0.1,
        ge=0,
        description="How long after the first unwritten event the writer writes anyway.",
    )
    buffer_capacity: int = Field(
        default=50_000,
        ge=1,
        description="Events read and not yet written before the consumer waits for the store.",
    )
    fetch_max_records: int = Field(
        default=2000, ge=1, description="Most Kafka records handed to the handler at once."
    )
    fetch_wait_ms: int = Field(
        default=50,
        ge=1,
        description="How long one fetch waits for records when none are there yet.",
    )
    fetch_max_wait_ms: int = Field(
        default=50,
        ge=0,
        le=60_000,
        description="Longest a fetch waits at the broker for `fetch_min_bytes` while records "
        "flow (an idle consumer's fetch waits fetch_idle_wait_ms, and is answered on the first "
        "record). With batch_linger_s it bounds how stale the views are: 150 ms by default.",
    )
    fetch_min_bytes: int = Field(
        default=16384,
        ge=1,
        description="Bytes a fetch asks the broker to gather while records flow (about 25 "
        "measurement events): the projector takes its records a few times a second rather than "
        "one or two at a time, each fetch costing a request and an answer parsed for every "
        "partition it reads (the other services ask for 4096). Idle, a fetch asks for one byte. "
        "1: every record at once.",
    )
    api_token: SecretStr | None = Field(
        default=None,
        description="Bearer token every view asks for (`Authorization: Bearer <token>`); "
        "/health and /metrics never ask. Needed to listen on an address other than loopback.",
    )
    api_token_file: Path | None = Field(
        default=None,
        description="A file holding the token (a mounted Kubernetes or compose secret); its "
        "surrounding whitespace is ignored. Used when `api_token` is not set.",
    )
    allow_unauthenticated: bool = Field(
        default=False,
        description="Serve the views without a token on an address other than loopback (for a "
        "proxy that authenticates in front of the projector); refused at start otherwise.",
    )

    @field_validator("api_token_file", mode="before")
    @classmethod
    def _blank_file_is_unset(cls, value: object) -> object:
        return blank_is_unset(value)
