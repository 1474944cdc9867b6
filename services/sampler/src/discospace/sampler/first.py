"""The first request of each (operation, request index) in the log: the only one answered.

Explorer replicas decide only for their own operations, but one that lost its partitions
without knowing it yet can publish a late `SamplesRequested`. Its id derives from the
operation's start and its request index, so it carries the id of the request it competes with,
maybe asking for something else (`SamplesRequested.fingerprint`). The explorers keep the first
of them in the log; the sampler must answer that one and no other, after a restart too.

So the sampler reads every request of the operations topic from the beginning (a replaying
consumer, in log order per partition) and records the fingerprint of the first per slot. Its
group consumer, before answering a request, waits until that slot is recorded (the replaying
consumer has read at least up to this request; it reads live, normally a few milliseconds
behind) and answers only a request with the recorded fingerprint: the first, or the same
decision again. If the slot is still unrecorded after the wait, the group consumer records the
request itself: it has read its partition in order since it got it, so the request is the first
unless the replaying consumer is behind where the group consumer started reading.

Once an operation has ended in the log (`OperationCompleted`, `OperationFailed`), its slots are
forgotten and only its id is kept: a request of an ended operation is never answered (a late
one, or one still unanswered when the operation was cancelled). The record so holds one
fingerprint per request of the running operations, plus one id per ended operation.
"""

from __future__ import annotations

import asyncio
import contextlib
from enum import Enum

from discospace.events import SamplesRequested


class Verdict(Enum):
    FIRST = "first"
    """The first request for its slot in the log (or the same decision again)."""
    CONFLICT = "conflict"
    """Another request for its slot came first in the log: not to be answered."""
    ENDED = "ended"
    """Its operation has ended in the log: not to be answered."""


class FirstRequests:
    """The fingerprint of the first request of every slot of the running operations, in log
    order, and the ids of the operations that ended."""

    def __init__(self) -> None:
        self._first: dict[str, dict[int, str]] = {}
        self._ended: set[str] = set()
        self._recorded = asyncio.Event()

    def __len__(self) -> int:
        """Slots recorded for the running operations."""
        return sum(len(slots) for slots in self._first.values())

    def record(self, request: SamplesRequested) -> Verdict:
        """Fold a request read in log order; its verdict."""
        if request.operation_id in self._ended:
            verdict = Verdict.ENDED
        else:
            fingerprint = request.fingerprint()
            slots = self._first.setdefault(request.operation_id, {})
            first = slots.setdefault(request.request_index, fingerprint)
            verdict = Verdict.FIRST if first == fingerprint else Verdict.CONFLICT
        self._announce()
        return verdict

    def end(self, operation_id: str) -> None:
        """The operation ended in the log: forget its slots, answer none of its requests."""
        self._first.pop(operation_id, None)
        self._ended.add(operation_id)
        self._announce()

    def verdict(self, request: SamplesRequested) -> Verdict | None:
        """The request's verdict; None while no request of its slot has been recorded."""
        if request.operation_id in self._ended:
            return Verdict.ENDED
        first = self._first.get(request.operation_id, {}).get(request.request_index)
        if first is None:
            return None
        return Verdict.FIRST if first == request.fingerprint() else Verdict.CONFLICT

    def _announce(self) -> None:
        recorded, self._recorded = self._recorded, asyncio.Event()
        recorded.set()

    async def wait_for(self, request: SamplesRequested, timeout_s: float) -> Verdict:
        """The request's verdict once its slot is recorded, or after `timeout_s` the verdict
        of recording it (the first of its slot if none was recorded meanwhile)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while (verdict := self.verdict(request)) is None:
                    await self._recorded.wait()
                return verdict
        return self.record(request)
