"""Settings of the explorer: `DISCOSPACE_EXPLORER_<FIELD>` (see ServiceSettings for shared ones)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from discospace.explorer.domain.decide import Timing
from discospace.runtime.settings import ServiceSettings

MAX_WAIT_S = 10**9
"""The longest wait a setting may give (about 31 years): it is added to the time of an event,
and a date past the year 9999 (1e12 s) failed every operation it applied to."""


class ExplorerSettings(ServiceSettings):
    """The explorer's settings; every field of `ServiceSettings`, prefixed."""

    model_config = SettingsConfigDict(env_prefix="DISCOSPACE_EXPLORER_", extra="ignore")

    service_name: ClassVar[str] = "explorer"

    http_port: int = Field(default=8102, ge=0, le=65535, description="Port of /health, /metrics.")
    measurement_retry_backoff_s: float = Field(
        default=5.0,
        ge=0,
        description="Wait before the first retry of a measurement that failed transiently; "
        "it doubles with each further attempt.",
    )
    measurement_retry_backoff_max_s: float = Field(
        default=300.0, ge=0, le=MAX_WAIT_S, description="The longest wait before a retry."
    )
    space_wait_s: float = Field(
        default=60.0,
        ge=0,
        le=MAX_WAIT_S,
        description="How long an operation on a space not read yet waits for it before it "
        "fails as not registered.",
    )
    cancel_wait_s: float = Field(
        default=600.0,
        ge=0,
        le=MAX_WAIT_S,
        description="How long a cancelled operation waits for the measurements it had in "
        "flight to land before it completes anyway (those still land in the store later).",
    )
    publish_retry_s: float = Field(
        default=1.0,
        gt=0,
        description="Pause before publishing a decision again when the broker refused it.",
    )
    session_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="How long the explorer group waits for a replica that stopped answering "
        "(killed, cut off) before its partitions, and so its operations, go to the other "
        "replicas (the broker's group.min.session.timeout.ms, 6 s by default, is the floor).",
    )
    rebalance_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="How long the group waits for a replica to give up partitions it is "
        "losing (it first finishes publishing the decision under way, retries included); a "
        "replica slower than this is dropped from the group and its partitions move anyway.",
    )
    catch_up_report_s: float = Field(
        default=30.0,
        gt=0,
        description="While a replica catches up with partitions it was given, how often it "
        "logs how far behind it still is.",
    )

    @property
    def timing(self) -> Timing:
        return Timing(
            retry_backoff_s=self.measurement_retry_backoff_s,
            retry_backoff_max_s=self.measurement_retry_backoff_max_s,
            space_wait_s=self.space_wait_s,
            cancel_wait_s=self.cancel_wait_s,
        )
