"""Knowing when the sampler has read its folded topics up to where they ended at start.

The sampler folds the spaces, actuators, measurements and operations topics with replaying
consumers (no group: every start reads them from the beginning). Answering a request before the
memo is folded could measure again what the store already holds, and answering one before the
first request of its slot is known could answer the wrong one (`first.py`), so the sampler
notes the end offset of every partition of those topics before its consumers start (the
runtime's `end_offsets`) and answers no request until a broker middleware has seen every one of
those partitions read to its end (`CatchUp.wait`), or until a time limit has passed (then it
goes on, and says so in the log).

The middleware sees every message a consumer takes, whatever became of it (folded, ignored,
dropped as a duplicate, dead-lettered), so no message can hold the catch-up back. The
operations topic is also read by the sampler's group consumer, but that one cannot move the
catch-up on: its handler waits for the catch-up before the middleware sees its message.
"""

from __future__ import annotations

import asyncio
import logging

from discospace.runtime.positions import Partition, ReadPositions

logger = logging.getLogger("discospace.sampler.catchup")


class CatchUp:
    """How far the replaying consumers have read, against the end offsets noted at start.

    Until `arm` is called there is nothing to wait for (in-memory tests run no startup).
    `middleware` is the broker middleware that reports every message taken.
    """

    def __init__(self) -> None:
        self._ends: dict[Partition, int] = {}
        self.positions = ReadPositions()
        self.middleware = self.positions.middleware

    def arm(self, ends: dict[Partition, int]) -> None:
        """Wait for every partition of `ends` to be read up to (not including) its end offset."""
        self._ends = {partition: end for partition, end in ends.items() if end > 0}

    def saw(self, topic: str, partition: int, offset: int) -> None:
        """A consumer took the message at `offset`."""
        self.positions.saw(topic, partition, offset)

    @property
    def behind(self) -> dict[Partition, int]:
        """Partitions not read to their end yet, with how many messages are left."""
        return self.positions.behind(self._ends)

    @property
    def caught_up(self) -> bool:
        return not self.behind

    async def wait(self, timeout_s: float) -> bool:
        """True once caught up; False when `timeout_s` passed first (logged once per call)."""
        try:
            await asyncio.wait_for(self.positions.wait_until(self._ends), timeout_s)
        except TimeoutError:
            logger.warning(
                "going on before the replay caught up (%d messages left)",
                sum(self.behind.values()),
            )
            return False
        return True
