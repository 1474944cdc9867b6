"""Which operations have ended, so a worker drops their work: a fold of the operations topic.

An operation ends when someone cancels it (`OperationCancelRequested`), or when the explorer
completes or fails it. Its measurements still running are stopped (the child process killed)
and its requests still queued are skipped: each is answered by a `MeasurementFailed` that is
not retried ("operation cancelled"), so progress accounts for every request.

The worker folds the topic up to its end at every start, before it takes any request (its
follower, `Service.follow`), so a request of an operation that ended before the start is
skipped, never started; an end published later stops the work as soon as it is folded in.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import TypeAlias

from discospace.events import OperationCancelRequested, OperationCompleted, OperationFailed

OperationEnd: TypeAlias = OperationCancelRequested | OperationCompleted | OperationFailed
"""The events after which an operation's remaining measurements are of no use."""

CANCELLED = "operation cancelled"


def end_reason(event: OperationEnd) -> str:
    """Why the operation's remaining measurements are dropped, as their failure reason."""
    if isinstance(event, OperationCancelRequested):
        return CANCELLED
    if isinstance(event, OperationCompleted):
        return CANCELLED if event.stop_reason == "cancelled" else "operation completed"
    return "operation failed"


class EndedOperations:
    """The operations that ended (the first reason wins), and the measurements waiting on one."""

    def __init__(self) -> None:
        self._ended: dict[str, str] = {}
        self._waiting: dict[str, set[asyncio.Future[str]]] = defaultdict(set)

    def __len__(self) -> int:
        return len(self._ended)

    def reason(self, operation_id: str) -> str | None:
        """Why the operation ended, or None while it runs."""
        return self._ended.get(operation_id)

    def record(self, event: OperationEnd) -> None:
        """Fold an end in, and wake the measurements of that operation."""
        operation_id = event.operation_id
        if operation_id in self._ended:
            return
        reason = self._ended[operation_id] = end_reason(event)
        for waiter in self._waiting.pop(operation_id, set()):
            if not waiter.done():
                waiter.set_result(reason)

    async def ended(self, operation_id: str) -> str:
        """Return (with the reason) once the operation has ended."""
        known = self._ended.get(operation_id)
        if known is not None:
            return known
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[operation_id].add(waiter)
        try:
            return await waiter
        finally:
            waiters = self._waiting.get(operation_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiting[operation_id]
