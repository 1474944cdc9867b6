"""Waiting in an async test for something the services do in their own time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

POLL_S = 0.05


async def eventually(check: Callable[[], object], timeout_s: float = 60.0, what: str = "") -> None:
    """Return once `check()` is true; fail the test (AssertionError, `what` or "not true", and
    the timeout) when `timeout_s` passes first."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what or 'not true'} after {timeout_s}s"
        await asyncio.sleep(POLL_S)
