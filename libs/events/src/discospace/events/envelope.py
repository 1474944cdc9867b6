"""The envelope every discospace event carries, and deterministic ids for caused events."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from discospace.events.topics import DEFAULT_TOPICS, Topic, TopicNames

EVENT_NAMESPACE = uuid.UUID("5b0b2c1e-8f0a-4c7e-9a57-6f1d2a4c0d15")

MAX_MESSAGE_BYTES = 1_048_576
"""The largest message, value, key and headers together, a service sends by default: Kafka's
default producer `max.request.size`, which the broker's default `message.max.bytes`
(1,048,588) takes. A service's `max_message_bytes` setting changes it."""

FRAMING_BYTES = 512
"""What a record adds to its value and key on the wire (record batch and record headers, the
event headers), with room to spare."""

MAX_REASON_CHARS = 500
"""The longest reason a decode error or a dead letter gives; longer ones are cut, marked with
an ellipsis."""


MAX_OPERATION_REASON_CHARS = 4_000
"""The longest text an operation's or a pipeline job's end carries from an operator or a hook
(a failure's reason, a stop detail): reasons nest (a pipeline's names its job's, which names
its child operation's), so this is longer than `MAX_REASON_CHARS`, and short enough that the
event always fits the smallest message limit a service takes (64 KiB)."""


def shortened(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """`text`, cut to `limit` characters (with "…"), as every reason in an event is."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_size(value: bytes, key: bytes | None) -> int:
    """How many bytes a message of `value` under `key` takes at most, framing included."""
    return len(value) + len(key or b"") + FRAMING_BYTES


def caused_event_id(causation_id: str, index: int = 0, kind: str = "") -> str:
    """The id of the `index`-th event of `kind` caused by `causation_id`.

    Derived from the cause alone, so a redelivered input yields the same output event id,
    and every consumer can drop the duplicate.
    """
    return str(uuid.uuid5(EVENT_NAMESPACE, f"{causation_id}/{kind}/{index}"))


def content_id(*parts: str) -> str:
    """A short stable hash of the given parts (for keys derived from content)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def type_field(name: str) -> Any:
    """The `type` field of an event class: its stable name, as constant and default."""
    return Field(
        default=name,
        description="Stable event type name, independent of the module path.",
        examples=[name],
    )


def version_field(version: int) -> Any:
    """The `schema_version` field of an event class: its current version."""
    return Field(
        default=version,
        description="Version of this event type's schema; older versions are upcast on read.",
        examples=[version],
    )


class Record(BaseModel):
    """Base of the value objects events carry: immutable, and strict about unknown fields.

    NaN and infinities are refused: JSON cannot carry them, so they would not survive the wire.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def _envelope_required(schema: dict[str, Any]) -> None:
    """`type` and `schema_version` are required of a writer, though a Python event has them by
    default: every generated schema says so (the AsyncAPI documents took messages without
    them, which every consumer refused)."""
    schema["required"] = list(
        dict.fromkeys(["type", "schema_version", *schema.get("required", [])])
    )


class Event(Record):
    """Base of every event: an immutable fact with its envelope.

    Subclasses set `type` as a `Literal` with their stable type name and `schema_version`
    as a `Literal` of their current version (both with that value as default), `TOPIC` to
    the logical topic they are published on, and override `key()`.
    """

    TOPIC: ClassVar[Topic]

    model_config = ConfigDict(json_schema_extra=lambda schema, _: _envelope_required(schema))

    event_id: str = Field(
        min_length=1,
        description="Unique id of this event; deterministic when caused by another event, "
        "so a redelivered cause yields the same id and consumers drop the duplicate.",
        examples=["0f8e5a4e-3f7b-5a39-9c1e-0c3f6b7d9a10"],
    )
    type: str = Field(
        description="Stable event type name, independent of the module path.",
        examples=["SpaceSubmitted"],
    )
    schema_version: int = Field(
        description="Version of this event type's schema; older versions are upcast on read.",
        examples=[1],
    )
    occurred_at: AwareDatetime = Field(
        description="When the fact happened, with a time zone (stored in UTC, ISO 8601).",
        examples=["2026-11-21T17:00:00Z"],
    )
    correlation_id: str | None = Field(
        default=None,
        description="The conversation this event belongs to: the operation id for operation "
        "and measurement events, the submission id for space events.",
        examples=["op-3f2a9c1d"],
    )
    causation_id: str | None = Field(
        default=None,
        description="The event_id of the event that caused this one; absent for commands a "
        "person or an outside system issued.",
        examples=["1a2b3c4d-0000-5000-8000-000000000000"],
    )

    @field_validator("occurred_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    def _correlated_with(self, conversation: str) -> Self:
        """This event, `conversation` its correlation id where none was given.

        For an `after` validator: a `before` one would make pydantic read a message's JSON into
        Python objects first, instead of validating it in one pass (25% slower to decode).
        """
        if self.correlation_id is None:
            self.__dict__["correlation_id"] = conversation
            self.__pydantic_fields_set__.add("correlation_id")
        return self

    @classmethod
    def type_name(cls) -> str:
        """The stable type name written in `type`."""
        return str(cls.model_fields["type"].default)

    @classmethod
    def current_version(cls) -> int:
        """The schema version this code writes."""
        return int(cls.model_fields["schema_version"].default)

    @classmethod
    def caused_by(cls, cause: Event, occurred_at: datetime, index: int = 0, **fields: Any) -> Self:
        """The `index`-th event of this type caused by `cause`, with an id derived from it.

        The correlation id is carried over from the cause unless `fields` sets one.
        """
        fields.setdefault("correlation_id", cause.correlation_id)
        return cls(
            event_id=caused_event_id(cause.event_id, index, cls.type_name()),
            occurred_at=occurred_at,
            causation_id=cause.event_id,
            **fields,
        )

    def key(self) -> bytes | None:
        """Kafka key: the aggregate this event belongs to (overridden per event type)."""
        return self.correlation_id.encode() if self.correlation_id else None

    def topic(self, names: TopicNames = DEFAULT_TOPICS) -> str:
        """The concrete topic this event is published on."""
        return names.name(self.TOPIC)


def event_message_size(event: Event, value: bytes | None = None) -> int:
    """How many bytes `event`'s message takes at most: its value (`value`, else encoded here),
    its key, its correlation id (a header of every message the services send: an operation's
    id, of any length) and the fixed framing."""
    correlation = (event.correlation_id or event.event_id).encode()
    encoded = event.model_dump_json().encode() if value is None else value
    return message_size(encoded, event.key()) + len(correlation)
