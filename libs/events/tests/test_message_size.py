"""The size check before publishing counts what the message really carries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from discospace.events import MAX_MESSAGE_BYTES, OperationCancelRequested, encode_within
from discospace.events.codec import EventTooLargeError
from discospace.events.envelope import event_message_size


def cancel(operation_id: str) -> OperationCancelRequested:
    at = datetime(2026, 11, 29, tzinfo=UTC)
    return OperationCancelRequested(
        event_id="e1", occurred_at=at, operation_id=operation_id, requested_by="alice"
    )


def test_the_correlation_id_a_message_carries_as_a_header_counts_toward_its_size() -> None:
    """An operation's id is its events' correlation id, a header of every message: uncounted,
    an event whose value and key fit passed the check and the producer refused the message
    with aiokafka's own error instead of this one sentence."""
    event = cancel("op-" + "x" * 300_000)
    value = event.model_dump_json().encode()
    assert len(value) + len(event.key()) < MAX_MESSAGE_BYTES  # value and key alone fit

    with pytest.raises(EventTooLargeError, match="over the 1048576-byte message limit"):
        encode_within(event)
    assert event_message_size(event) > len(value) + len(event.key()) + 300_000


def test_an_ordinary_event_passes_the_check() -> None:
    event = cancel("op-3f2a9c1d")

    assert encode_within(event) == event.model_dump_json().encode()
