"""Which operations this explorer replica decides for: the partitions its group gives it.

Every replica folds every event (spaces, operations, measurements: all partitions, no group),
but decides only for the operations of the operations-topic partitions that the consumer group
`<prefix>.explorer` assigns to it. That group's consumer reads nothing (its partitions stay
paused): it is only a member, and its rebalance listener moves the explorer's ownership.

- Revoked: the explorer stops deciding for every operation before the callback returns; a
  decision round under way finishes publishing first (it holds the explorer's lock). Kafka
  calls every member's revoke before any member's assign, so a partition has one owner at a
  time among the replicas that answer the group.
- Assigned: the end offsets of every partition of the three topics are noted; once the explorer
  has folded them up to there, it decides for the operations of its partitions. So it has read
  every decision the previous owner published before it decides anything for them.

A replica that lost its partitions without knowing it yet (paused past the session timeout) may
still publish one late decision: `conflicts.py` makes every reader keep the first in the log.
`LogHistory` reads an operation's events back from its partitions, so a replica whose own
decision lost can rebuild that operation as the log has it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from discospace.events import Event
from discospace.events.common import OperationEvent
from discospace.events.topics import TopicNames
from discospace.explorer.service.live import LiveExplorer
from discospace.explorer.service.metrics import ExplorerMetrics
from discospace.explorer.service.placement import owner_of, partition_of
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime.positions import ReadPositions, end_offsets
from discospace.runtime.replay import existing_partitions, replay_until
from discospace.runtime.retrying import until_done
from discospace.runtime.security import client_kwargs

logger = logging.getLogger("discospace.explorer.service.ownership")

POLL_MS = 1000


class Ownership(ConsumerRebalanceListener):
    """A member of the explorer's group; moves the explorer's ownership with its assignment."""

    def __init__(
        self,
        settings: ExplorerSettings,
        explorer: LiveExplorer,
        positions: ReadPositions,
        metrics: ExplorerMetrics | None = None,
    ) -> None:
        self.settings, self.explorer, self.positions = settings, explorer, positions
        self.metrics = metrics
        self.topics = settings.topics
        self.consumer: AIOKafkaConsumer | None = None
        self.owned: frozenset[int] = frozenset()
        self._generation = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Join the group; the explorer decides once it has partitions and has caught up."""
        session_ms = int(self.settings.session_timeout_s * 1000)
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka_bootstrap_servers,
            group_id=self.settings.consumer_group,
            client_id="discospace-explorer-ownership",
            enable_auto_commit=False,
            auto_offset_reset="latest",
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=int(self.settings.rebalance_timeout_s * 1000),
            heartbeat_interval_ms=max(100, session_ms // 3),
            **client_kwargs(),
        )
        self.consumer.subscribe([self.topics.operations], listener=self)
        await self.consumer.start()
        self._spawn(self._stay_in_group(self.consumer), "explorer-membership")

    async def stop(self) -> None:
        """Stop deciding, then leave the group, so the other replicas take over at once."""
        self._generation += 1
        await self.explorer.release()
        self._show(frozenset())
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.consumer is not None:
            await self.consumer.stop()

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._generation += 1
        await self.explorer.release()
        if self.owned:
            logger.info("partitions %s taken away: deciding for none", sorted(self.owned))
        self._show(frozenset())

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        assert self.consumer is not None
        self.consumer.pause(*assigned)
        partitions = frozenset(tp.partition for tp in assigned)
        count = len(self.consumer.partitions_for_topic(self.topics.operations) or ())
        if partitions and count:
            self._spawn(self._take_over(partitions, count, self._generation), "explorer-takeover")

    async def _take_over(self, partitions: frozenset[int], count: int, generation: int) -> None:
        """Catch up with the log as it is now, then decide for the operations of `partitions`."""
        topics = [self.topics.spaces, self.topics.operations, self.topics.measurements]
        bootstrap = self.settings.kafka_bootstrap_servers
        ends = await until_done(
            lambda: end_offsets(bootstrap, topics), "reading end offsets", 1.0, logger
        )
        logger.info(
            "given partitions %s of %s: folding %d events more before deciding for them",
            sorted(partitions),
            count,
            sum(self.positions.behind(ends).values()),
        )
        await self._catch_up(ends, partitions)
        if generation != self._generation:
            return
        await self.explorer.own(owner_of(partitions, count))
        if generation == self._generation:
            logger.info("deciding for the operations of partitions %s", sorted(partitions))
            self._show(partitions, count)

    async def _catch_up(self, ends: dict[tuple[str, int], int], partitions: frozenset[int]) -> None:
        """Wait until the log is folded up to `ends`, saying how far behind every so often."""
        while True:
            try:
                async with asyncio.timeout(self.settings.catch_up_report_s):
                    await self.positions.wait_until(ends)
                return
            except TimeoutError:
                behind = self.positions.behind(ends)
                logger.warning(
                    "still catching up before deciding for partitions %s: %d events left in %s",
                    sorted(partitions),
                    sum(behind.values()),
                    sorted(f"{topic}[{partition}]" for topic, partition in behind),
                )

    def _show(self, partitions: frozenset[int], count: int = 0) -> None:
        self.owned = partitions
        if self.metrics is not None:
            self.metrics.show_owned(partitions, count)

    def _spawn(self, work: Awaitable[None], name: str) -> None:
        task = asyncio.ensure_future(work)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _stay_in_group(consumer: AIOKafkaConsumer) -> None:
        """Keep polling (every partition paused): a member that stops polling leaves the group."""
        while True:
            try:
                await consumer.getmany(timeout_ms=POLL_MS)
            except Exception as error:  # the broker's errors vary; polling again is the answer
                logger.warning("polling the explorer group failed, polling again: %s", error)
                await asyncio.sleep(POLL_MS / 1000)


class LogHistory:
    """An operation's events read back from its partitions, up to where the explorer folded.

    Not the start-up fold (`handlers.fold_history`, the runtime's `fold_then_follow`): that
    reads every partition up to where it ends now and then goes live; this reads, while live,
    only the two partitions that hold one operation, up to this explorer's read positions
    (not the end: events past them are still coming through the consumer), and hands the
    events back instead of folding them, so `conflicts.rebuild` replaces that one operation.
    """

    def __init__(self, bootstrap_servers: str, topics: TopicNames, positions: ReadPositions):
        self.bootstrap_servers, self.topics, self.positions = bootstrap_servers, topics, positions

    async def __call__(self, operation_id: str) -> list[OperationEvent]:
        read = [self.topics.operations, self.topics.measurements]
        counts: dict[str, int] = {}
        for partition in await existing_partitions(self.bootstrap_servers, read):
            counts[partition.topic] = counts.get(partition.topic, 0) + 1
        until = {}
        for topic, count in counts.items():
            partition = partition_of(operation_id, count)
            if end := self.positions.position(topic, partition):
                until[(topic, partition)] = end
        events: list[Event] = []
        await replay_until(self.bootstrap_servers, until, events.append)
        mine = [e for e in events if isinstance(e, OperationEvent)]
        return [e for e in mine if e.operation_id == operation_id]
