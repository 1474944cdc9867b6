"""Counts in the query string: ASCII digits up to `MAX_COUNT`, else 400 with a sentence."""

from __future__ import annotations

import pytest

from discospace.projector.errors import ViewError
from discospace.projector.routes import MAX_COUNT, Query


@pytest.mark.parametrize(
    "text", ["0", "5", "0007", str(MAX_COUNT), "00000001", "0" * 5000 + "12", "0" * 9]
)
def test_a_count_in_ascii_digits_up_to_the_maximum_is_read(text: str) -> None:
    """Leading zeros write the same number: 00000001 was refused by its length."""
    assert Query(f"limit={text}".encode()).count("limit") == int(text.lstrip("0") or "0")


@pytest.mark.parametrize(
    "text",
    ["-1", "1e3", "²", "١٢", "5 ", str(MAX_COUNT + 1), "1000000000", "9" * 32, "1%00"],
)
def test_any_other_count_is_refused_with_one_sentence(text: str) -> None:
    query = Query(b"limit=" + text.encode())
    with pytest.raises(ViewError, match="must be a whole number from 0 to") as refused:
        query.count("limit")
    assert "\n" not in str(refused.value)


def test_a_missing_count_is_no_count_and_an_empty_one_is_refused() -> None:
    assert Query(b"").count("limit") is None
    with pytest.raises(ViewError, match=r"^the query parameter 'limit' is empty\.$"):
        Query(b"limit=").count("limit")


def test_the_largest_count_is_a_million_rows_and_a_long_value_is_cut_in_the_sentence() -> None:
    assert MAX_COUNT == 1_000_000
    with pytest.raises(ViewError) as refused:
        Query(b"limit=" + b"x" * 100_000).count("limit")
    sentence = str(refused.value)
    assert sentence.startswith("limit must be a whole number from 0 to 1,000,000, not 'xxx")
    assert sentence.endswith("x…'.")
    assert len(sentence) < 150
