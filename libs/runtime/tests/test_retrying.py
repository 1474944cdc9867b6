"""Work that must go through is tried again after each failure, saying what failed."""

from __future__ import annotations

import asyncio
import logging

import pytest

from discospace.runtime.retrying import until_done

logger = logging.getLogger("test.retrying")


async def test_work_is_tried_again_until_it_gives_its_result(caplog):
    calls = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("broker away")
        return "done"

    with caplog.at_level(logging.WARNING, logger="test.retrying"):
        assert await until_done(flaky, "reading offsets", 0.001, logger) == "done"

    assert len(calls) == 3
    assert [r.getMessage() for r in caplog.records] == [
        "reading offsets failed, trying again: broker away"
    ] * 2


async def test_only_cancellation_stops_it():
    async def never() -> None:
        raise ConnectionError("broker away")

    task = asyncio.create_task(until_done(never, "publishing", 0.001, logger))
    await asyncio.sleep(0.05)
    assert not task.done()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
