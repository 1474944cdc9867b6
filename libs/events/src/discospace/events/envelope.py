"""The envelope every discospace event carries, and deterministic ids for caused events."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

EVENT_NAMESPACE = uuid.UUID("5b0b2c1e-8f0a-4c7e-9a57-6f1d2a4c0d15")


def caused_event_id(causation_id: str, index: int = 0, kind: str = "") -> str:
    """The id of the `index`-th event of `kind` caused by `causation_id`.

    Derived from the cause alone, so a redelivered input yields the same output event id,
    and every consumer can drop the duplicate.
    """
    return str(uuid.uuid5(EVENT_NAMESPACE, f"{causation_id}/{kind}/{index}"))


def content_id(*parts: str) -> str:
    """A short stable hash of the given parts (for keys derived from content)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


class Event(BaseModel):
    """Base of every event: an immutable fact with its envelope.

    Subclasses set `type` as a `Literal` with their stable type name and `schema_version`
    as a `Literal` of their current version; `TOPIC` names where they are published.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    TOPIC: ClassVar[str] = ""

    event_id: str = Field(description="Unique id of this event; deterministic when caused by another event.",
                          examples=["0f8e5a4e-3f7b-5a39-9c1e-0c3f6b7d9a10"])
    type: str = Field(description="Stable event type name, independent of the module path.")
    schema_version: int = Field(description="Version of this event type's schema.", examples=[1])
    occurred_at: datetime = Field(description="When the fact happened (UTC, ISO 8601).",
                                  examples=["2026-11-21T17:00:00Z"])
    correlation_id: str | None = Field(default=None, description="The operation this event belongs to, if any.",
                                       examples=["op-3f2a9c1d"])
    causation_id: str | None = Field(default=None, description="The event_id of the event that caused this one.",
                                     examples=["1a2b3c4d-0000-5000-8000-000000000000"])

    def key(self) -> bytes | None:
        """Kafka key: the aggregate this event belongs to (overridden per event type)."""
        return self.correlation_id.encode() if self.correlation_id else None
