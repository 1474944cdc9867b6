"""Dead letters: a message a consumer could not decode or handle, kept with the reason.

A dead letter always fits the message size limit: it carries the original in base64 (a third
larger), so an original too large for that is cut short, and `original_size` and
`original_sha256` say what it was (`original_truncated` tells which). The key, an aggregate id
of a few bytes in every event, is cut to `MAX_KEY_BYTES`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from datetime import datetime
from typing import Literal

from pydantic import Field, NonNegativeInt, field_validator

from discospace.events.common import NonEmptyStr
from discospace.events.envelope import (
    MAX_MESSAGE_BYTES,
    MAX_REASON_CHARS,
    Event,
    caused_event_id,
    event_message_size,
    type_field,
    version_field,
)
from discospace.events.topics import Topic, dead_letter_key

MAX_KEY_BYTES = 1024
"""The longest original key a dead letter keeps."""


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
    original_size: NonNegativeInt | None = Field(
        default=None,
        description="Size in bytes of the message value as it was read (absent in dead "
        "letters written before it was recorded).",
        examples=[1000000],
    )
    original_sha256: str | None = Field(
        default=None,
        pattern="^[0-9a-f]{64}$",
        description="SHA-256 of the message value as it was read, hex (absent in dead letters "
        "written before it was recorded).",
        examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],
    )
    original_truncated: bool = Field(
        default=False,
        description="Whether `original_base64` holds only the start of the value: the whole "
        "would not fit the message size limit (see `original_size`, `original_sha256`).",
        examples=[False],
    )
    original_key_base64: str | None = Field(
        default=None,
        description="The message key as it was read, base64-encoded (absent without a key), "
        f"cut to its first {MAX_KEY_BYTES} bytes.",
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
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> DeadLettered:
        """The dead letter of one read message; its id derives from where the message was read,
        so the same message set aside twice by the same consumer yields one dead letter. The
        original is cut short where the whole would not fit `max_message_bytes`."""
        position = f"{source_topic}/{source_partition}/{source_offset}@{consumer}"
        if len(reason) > MAX_REASON_CHARS:
            reason = reason[: MAX_REASON_CHARS - 1] + "…"
        letter = cls(
            event_id=caused_event_id(position, 0, cls.type_name()),
            occurred_at=occurred_at,
            reason=reason,
            original_base64="",
            original_size=len(original),
            original_sha256=hashlib.sha256(original).hexdigest(),
            original_key_base64=None if key is None else _base64(key[:MAX_KEY_BYTES]),
            source_topic=source_topic,
            source_partition=source_partition,
            source_offset=source_offset,
            consumer=consumer,
        )
        room = max_message_bytes - event_message_size(letter)
        kept = original if len(_base64(original)) <= room else original[: max(room, 0) // 4 * 3]
        return letter.model_copy(
            update={"original_base64": _base64(kept), "original_truncated": kept != original}
        )

    def without_original(self) -> DeadLettered:
        """This letter with none of the original's bytes (its size and SHA-256 kept): for a
        dead-letter topic that takes smaller messages than the service that set it aside."""
        return self.model_copy(update={"original_base64": "", "original_truncated": True})

    def original(self) -> bytes:
        """The message value as it was read (its start only, when `original_truncated`)."""
        return base64.b64decode(self.original_base64)

    def key(self) -> bytes:
        return dead_letter_key(self.source_topic, self.source_partition, self.source_offset)


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode()
