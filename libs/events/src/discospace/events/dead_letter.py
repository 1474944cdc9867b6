"""Dead letters: a message a consumer could not decode or handle, kept with the reason."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Literal

from pydantic import Field, NonNegativeInt, field_validator

from discospace.events.common import NonEmptyStr
from discospace.events.envelope import Event, caused_event_id, type_field, version_field
from discospace.events.topics import Topic, dead_letter_key


class DeadLettered(Event):
    """A consumer set a message aside instead of crashing on it, and moved on."""

    TOPIC = Topic.DEAD_LETTER

    type: Literal["DeadLettered"] = type_field("DeadLettered")
    schema_version: Literal[1] = version_field(1)
    reason: NonEmptyStr = Field(
        description="Why the message was set aside, in one sentence.",
        examples=["not JSON: Expecting value: line 1 column 1 (char 0)"],
    )
    original_base64: str = Field(
        description="The message value exactly as it was read, base64-encoded.",
        examples=["eyJ0eXBlIjogIk9wZXJhdGlvblJlcXVlc3RlZCJ9"],
    )
    original_key_base64: str | None = Field(
        default=None,
        description="The message key as it was read, base64-encoded (absent without a key).",
        examples=["b3AtM2YyYTljMWQ="],
    )
    source_topic: NonEmptyStr = Field(
        description="Topic the message was read from.", examples=["discospace.operations"]
    )
    source_partition: NonNegativeInt = Field(
        description="Partition the message was read from.", examples=[0]
    )
    source_offset: NonNegativeInt = Field(
        description="Offset of the message in its partition.", examples=[1042]
    )
    consumer: NonEmptyStr = Field(
        description="The service (consumer group) that could not handle it.",
        examples=["explorer"],
    )

    @field_validator("original_base64", "original_key_base64")
    @classmethod
    def _is_base64(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                base64.b64decode(value, validate=True)
            except binascii.Error:
                raise ValueError("must be base64") from None
        return value

    @classmethod
    def of_message(
        cls,
        *,
        original: bytes,
        key: bytes | None,
        source_topic: str,
        source_partition: int,
        source_offset: int,
        consumer: str,
        reason: str,
        occurred_at: datetime,
    ) -> DeadLettered:
        """The dead letter of one read message; its id derives from where the message was read,
        so the same message set aside twice by the same consumer yields one dead letter."""
        position = f"{source_topic}/{source_partition}/{source_offset}@{consumer}"
        return cls(
            event_id=caused_event_id(position, 0, cls.type_name()),
            occurred_at=occurred_at,
            reason=reason,
            original_base64=base64.b64encode(original).decode(),
            original_key_base64=None if key is None else base64.b64encode(key).decode(),
            source_topic=source_topic,
            source_partition=source_partition,
            source_offset=source_offset,
            consumer=consumer,
        )

    def original(self) -> bytes:
        """The message value as it was read."""
        return base64.b64decode(self.original_base64)

    def key(self) -> bytes:
        return dead_letter_key(self.source_topic, self.source_partition, self.source_offset)
