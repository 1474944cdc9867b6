"""Committing a consumer group's offsets in the background, several messages in one commit.

A member of a consumer group commits a message's offset only once the message is done with
(handled, whose effects its handler awaited as published; or set aside: ignored, dead-lettered;
see `deadletter.py`). Committing after each message cost a round trip to the broker per
message on the handler's path: the next message waited for it. Here the middleware only notes
the offset (`OffsetCommits.done`) and one task per consumer commits what was noted: at once
when it is idle, else once the commit in flight has returned and `COMMIT_EVERY_S` has passed
since it began, every offset noted meanwhile in one call. So commits never run ahead of
handling, and while messages flow a consumer commits at most twenty times a second rather
than once per message or two (each commit a request the broker answers: in the loop's sampler,
a commit per message or two was an eighth of its samples).

What is not committed yet is delivered again after a crash, exactly as a message handled just
before a crash always was: the handlers are idempotent (duplicate ids dropped, deterministic
ids). Noted offsets are committed before the partitions are taken away by a rebalance (the
rebalance listener) and before the consumer stops (the close of its Kafka consumer, once the
last message is done with, first waits for a commit in flight and commits what is noted:
`consuming.Consumer._stop`). A commit the broker refuses because the partition moved to
another member is dropped (that member reads on from the last commit); a failure of the broker
is tried again, with the offsets noted since merged in.

A handler whose message's effects come later (the sampler's request whose pairs wait for a
measurement in flight) holds its offset (`OffsetCommits.hold`, through `consuming.hold_commit`)
and returns: the consumer goes on with the next messages, and the partition's commit stays
below the held message until its release, so a crash delivers it again (with what came after
it, which the handlers drop as duplicates or answer the same again).

The events a handler published are not awaited on its path (`confirming.py`): a commit first
takes the offsets to commit, then waits until every send made so far is confirmed (`settle`),
so no offset is committed before the effects of its message are in the log. After a send that
failed for good nothing is committed any more (`SendFailedError`): the service must be started
again, and reads on from its last commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError, KafkaError

from discospace.runtime.confirming import SendFailedError

logger = logging.getLogger("discospace.runtime.committing")

RETRY_S = 0.5
"""Pause before a commit that failed for a broker error is tried again."""
COMMIT_EVERY_S = 0.05
"""Shortest time from the start of one commit to the start of the next while messages flow:
what a crash delivers again grows by at most this much of the stream (handlers are
idempotent), a rebalance or a stop commits at once whatever it says."""
CLOSE_COMMIT_S = 5.0
"""How long a consumer that is closing waits for its last commit: a broker that has not
answered by then costs a redelivery to the next owner, never a shutdown that hangs (aiokafka
retries a commit while the group coordinator is unknown, without bound)."""


class OffsetCommits:
    """The next offset to commit per partition of one consumer, and the task committing them."""

    def __init__(
        self,
        consumer: Callable[[], AIOKafkaConsumer | None],
        settle: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._consumer = consumer
        self._settle = settle
        """Waits for the service's sends made so far (`Unconfirmed.settle`)."""
        self._noted: dict[TopicPartition, int] = {}
        self._held: dict[TopicPartition, list[int]] = {}
        """Offsets of messages handled whose effects come later, per partition: the commit
        stays at the lowest until it is released."""
        self._committed: dict[TopicPartition, int] = {}
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.commits = 0
        """Commits made (each may hold several messages' offsets)."""

    def done(self, topic: str, partition: int, offset: int) -> None:
        """The message at `offset` is done with: commit `offset + 1` soon."""
        self._noted[TopicPartition(topic, partition)] = offset + 1
        self._wake_up()

    def _wake_up(self) -> None:
        """Have the task commit what is noted (starting it when it is not running)."""
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="offset-commits")

    def hold(self, topic: str, partition: int, offset: int) -> Callable[[], None]:
        """Keep the partition's commit at most `offset` (the message there is delivered again
        after a crash) until the returned release is called; releasing twice, or after the
        partition moved to another member, does nothing."""
        tp = TopicPartition(topic, partition)
        self._held.setdefault(tp, []).append(offset)
        held = self._held[tp]

        def release() -> None:
            if self._held.get(tp) is not held or offset not in held:
                return
            held.remove(offset)
            if not held:
                del self._held[tp]
            if tp in self._noted:
                self._wake_up()

        return release

    @property
    def held(self) -> dict[TopicPartition, int]:
        """Per partition with a held message, the lowest held offset."""
        return {tp: min(offsets) for tp, offsets in self._held.items()}

    @property
    def pending(self) -> dict[TopicPartition, int]:
        """The offsets noted and not committed yet."""
        return dict(self._noted)

    async def flush(self) -> None:
        """Commit every offset noted so far, now."""
        async with self._lock:
            await self._commit()

    async def stop(self) -> None:
        """Stop the task, then commit what is noted (best effort: a failure is logged)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            await self.flush()
        except Exception as error:  # the broker is away: these are delivered again
            logger.warning("offsets not committed at stop (%s): delivered again", error)

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Drop what is noted for `partitions` (no longer this member's). Their holds stay
        until released: a partition that comes back to this member is read again from the held
        message, which its handler drops as already seen, so only the hold keeps the commit
        below it while its effects are still to come."""
        for partition in partitions:
            self._noted.pop(partition, None)
            self._committed.pop(partition, None)

    async def _run(self) -> None:
        clock = asyncio.get_running_loop().time
        while True:
            await self._wake.wait()
            self._wake.clear()
            began = clock()
            try:
                async with self._lock:
                    await self._commit()
            except SendFailedError:  # logged once where it failed: nothing is committed now
                continue
            except Exception as error:  # a broker error: keep the offsets, try again soon
                logger.warning("offsets not committed (%s); trying again", error)
                self._wake.set()
                await asyncio.sleep(RETRY_S)
                continue
            await asyncio.sleep(max(0.0, COMMIT_EVERY_S - (clock() - began)))

    async def _commit(self) -> None:
        consumer = self._consumer()
        if not self._noted or consumer is None:
            return
        noted, self._noted = self._noted, {}
        owned = consumer.assignment()
        offsets: dict[TopicPartition, int] = {}
        for tp, offset in noted.items():
            if tp not in owned:
                continue
            held = self._held.get(tp)
            if held and min(held) < offset:  # committed up to the held message; the rest later
                self._noted[tp] = offset
                offset = min(held)
            if self._committed.get(tp) != offset:
                offsets[tp] = offset
        if not offsets:
            return
        try:
            if self._settle is not None:  # the sends of the handlers done with are confirmed
                await self._settle()
        except BaseException:
            self._keep(offsets)
            raise
        try:
            await consumer.commit(offsets)
            self.commits += 1
            self._committed.update(offsets)
        except (CommitFailedError, IllegalStateError) as error:
            # The partitions moved to another member, which reads on from the last commit.
            logger.info("offsets not committed, the group moved on (%s)", error)
        except KafkaError:
            self._keep(offsets)
            raise

    def _keep(self, offsets: dict[TopicPartition, int]) -> None:
        """Note `offsets` again for the next commit (what was noted meanwhile is further on)."""
        for tp, offset in offsets.items():
            self._noted.setdefault(tp, offset)


class CommitBeforeRevoke(ConsumerRebalanceListener):
    """Commits what is noted before the group takes partitions away."""

    def __init__(self, commits: OffsetCommits) -> None:
        self.commits = commits

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        try:
            await self.commits.flush()
        except Exception as error:  # delivered again to the next owner
            logger.warning("offsets not committed before a rebalance (%s)", error)
        self.commits.forget(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        return None


_BY_SUBSCRIBER: weakref.WeakKeyDictionary[object, OffsetCommits] = weakref.WeakKeyDictionary()


def register(subscriber: object, commits: OffsetCommits) -> None:
    """Let the middleware find `subscriber`'s commits (`commits_of`)."""
    _BY_SUBSCRIBER[subscriber] = commits


def commits_of(subscriber: object) -> OffsetCommits | None:
    """The commits of a consumer group's subscriber; None for a consumer without a group."""
    try:
        return _BY_SUBSCRIBER.get(subscriber)
    except TypeError:  # not weakly referenceable: not one of ours
        return None
