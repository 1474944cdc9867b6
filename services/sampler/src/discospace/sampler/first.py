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
"""

from __future__ import annotations

import asyncio
import contextlib
from enum import Enum

from discospace.events import SamplesRequested

Slot = tuple[str, int]
"""(operation id, request index)"""


class Verdict(Enum):
    FIRST = "first"
    """The first request for its slot in the log (or the same decision again)."""
    CONFLICT = "conflict"
    """Another request for its slot came first in the log: not to be answered."""


class FirstRequests:
    """The fingerprint of the first request of every slot, in log order."""

    def __init__(self) -> None:
        self._first: dict[Slot, str] = {}
        self._recorded = asyncio.Event()

    def __len__(self) -> int:
        return len(self._first)

    def record(self, request: SamplesRequested) -> Verdict:
        """Fold a request read in log order; its verdict."""
        fingerprint = request.fingerprint()
        first = self._first.setdefault((request.operation_id, request.request_index), fingerprint)
        recorded, self._recorded = self._recorded, asyncio.Event()
        recorded.set()
        return Verdict.FIRST if first == fingerprint else Verdict.CONFLICT

    def verdict(self, request: SamplesRequested) -> Verdict | None:
        """The request's verdict; None while no request of its slot has been recorded."""
        first = self._first.get((request.operation_id, request.request_index))
        if first is None:
            return None
        return Verdict.FIRST if first == request.fingerprint() else Verdict.CONFLICT

    async def wait_for(self, request: SamplesRequested, timeout_s: float) -> Verdict:
        """The request's verdict once its slot is recorded, or after `timeout_s` the verdict
        of recording it (the first of its slot if none was recorded meanwhile)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while (verdict := self.verdict(request)) is None:
                    await self._recorded.wait()
                return verdict
        return self.record(request)
