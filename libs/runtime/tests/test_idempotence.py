"""The bounded memory of handled event ids."""

from __future__ import annotations

import pytest

from discospace.runtime import SeenEventIds


def test_an_id_is_new_once():
    seen = SeenEventIds(capacity=10)
    assert seen.first_time("a") is True
    assert seen.first_time("a") is False


def test_the_least_recently_seen_id_is_forgotten_first():
    seen = SeenEventIds(capacity=2)
    for event_id in ("a", "b", "a", "c"):
        seen.first_time(event_id)
    assert ("a" in seen, "b" in seen, "c" in seen) == (True, False, True)
    assert len(seen) == 2


def test_a_forgotten_id_is_new_again():
    seen = SeenEventIds()
    seen.first_time("a")
    seen.forget("a")
    assert seen.first_time("a") is True


def test_a_capacity_below_one_is_refused():
    with pytest.raises(ValueError, match="capacity of at least 1"):
        SeenEventIds(capacity=0)
