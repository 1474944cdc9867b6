"""`eventually`: returns once its check holds, fails the test with a sentence when it never does."""

from __future__ import annotations

import asyncio

import pytest

from discospace.testing.waiting import eventually


async def test_it_returns_once_the_check_holds() -> None:
    done = asyncio.Event()
    asyncio.get_running_loop().call_later(0.1, done.set)

    await eventually(done.is_set, 10)

    assert done.is_set()


async def test_a_check_that_never_holds_fails_with_what_was_awaited() -> None:
    with pytest.raises(AssertionError, match=r"the record never came after 0.2s"):
        await eventually(lambda: False, 0.2, "the record never came")
    with pytest.raises(AssertionError, match=r"not true after 0.1s"):
        await eventually(lambda: False, 0.1)
