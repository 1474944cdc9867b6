"""Work against the broker that must go through: tried again, after a pause, until it does."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def _always(error: Exception) -> bool:
    return True


async def until_done(
    work: Callable[[], Awaitable[T]],
    doing: str,
    pause_s: float,
    logger: logging.Logger,
    retry_if: Callable[[Exception], bool] = _always,
) -> T:
    """`work()`'s result, calling it again `pause_s` after each failure (logged as a warning
    saying what was being done); only cancellation stops it, and an error `retry_if` says is
    not worth another try (raised)."""
    while True:
        try:
            return await work()
        except Exception as error:  # the broker's errors vary; trying again is the answer
            if not retry_if(error):
                raise
            logger.warning("%s failed, trying again: %s", doing, error)
            await asyncio.sleep(pause_s)
