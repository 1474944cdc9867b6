"""A dead letter always fits the message size limit: an original too large to carry whole in
base64 is cut short, with its size and sha256 (issue 13, item 3)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from discospace.events import MAX_MESSAGE_BYTES, DeadLettered, decode, encode, encode_within
from discospace.events.envelope import message_size

AT = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)


def letter(original: bytes, limit: int = MAX_MESSAGE_BYTES, key: bytes = b"k") -> DeadLettered:
    return DeadLettered.of_message(
        original=original,
        key=key,
        source_topic="discospace.operations",
        source_partition=0,
        source_offset=7,
        consumer="explorer",
        reason="not JSON: Expecting value: line 1 column 1 (char 0)",
        occurred_at=AT,
        max_message_bytes=limit,
    )


def test_a_small_original_is_kept_whole_with_its_size_and_sha256() -> None:
    dead = letter(b"not json")
    assert (dead.original(), dead.original_truncated) == (b"not json", False)
    assert dead.original_size == 8
    assert dead.original_sha256 == hashlib.sha256(b"not json").hexdigest()


@pytest.mark.parametrize("size", [800_000, 1_000_000, 3_000_000])
def test_an_original_too_large_to_carry_whole_is_cut_short_and_the_letter_fits(size: int) -> None:
    original = bytes(range(256)) * (size // 256)
    dead = letter(original, key=b"k" * 5000)
    assert message_size(encode(dead), dead.key()) <= MAX_MESSAGE_BYTES
    encode_within(dead)  # its correlation id header counted too: it is sent with its original
    assert dead.original_truncated
    assert original.startswith(dead.original())
    assert len(dead.original()) > 700_000
    assert (dead.original_size, dead.original_sha256) == (
        len(original),
        hashlib.sha256(original).hexdigest(),
    )


def test_a_smaller_limit_cuts_sooner() -> None:
    dead = letter(b"x" * 200_000, limit=100_000)
    assert message_size(encode(dead), dead.key()) <= 100_000
    assert dead.original_truncated


def test_a_dead_letter_written_before_sizes_were_recorded_still_loads() -> None:
    dead = letter(b"not json")
    old = encode(dead).replace(b',"original_size":8', b"")
    old = old.replace(f',"original_sha256":"{dead.original_sha256}"'.encode(), b"")
    old = old.replace(b',"original_truncated":false', b"")
    assert b"original_size" not in old
    loaded = decode(old)
    assert isinstance(loaded, DeadLettered)
    assert (loaded.original_size, loaded.original_sha256, loaded.original_truncated) == (
        None,
        None,
        False,
    )
