"""Offsets of a consumer group committed in the background (`committing.py`), against a fake
aiokafka consumer whose commits wait until the test lets them through."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import CommitFailedError, KafkaConnectionError

from discospace.runtime import committing
from discospace.runtime.committing import CommitBeforeRevoke, OffsetCommits

A, B, GONE = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


class FakeConsumer:
    """Records commits; each waits for `release` while `hold` is set; may fail."""

    def __init__(self, assigned: set[TopicPartition]) -> None:
        self.assigned = assigned
        self.commits: list[dict[TopicPartition, int]] = []
        self.hold = False
        self.release = asyncio.Event()
        self.failures: list[Exception] = []

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        if self.hold:
            await self.release.wait()
        if self.failures:
            raise self.failures.pop(0)
        self.commits.append(dict(offsets))


async def _settled(commits: OffsetCommits) -> None:
    for _ in range(200):
        await asyncio.sleep(0.005)
        if not commits.pending:
            return


async def test_offsets_noted_while_a_commit_is_in_flight_go_in_the_next_one() -> None:
    consumer = FakeConsumer({A, B})
    commits = OffsetCommits(lambda: consumer)
    consumer.hold = True
    commits.done("t", 0, 0)
    await asyncio.sleep(0.01)  # the first commit is in flight, waiting
    for offset in range(1, 10):
        commits.done("t", 0, offset)
    commits.done("t", 1, 4)
    consumer.hold = False
    consumer.release.set()
    await _settled(commits)
    await commits.stop()

    assert consumer.commits == [{A: 1}, {A: 10, B: 5}]
    assert commits.commits == 2


async def test_offsets_noted_soon_after_a_commit_wait_for_the_interval_and_go_together() -> None:
    """The fake answers at once: without the interval, each offset would be a commit."""
    consumer = FakeConsumer({A})
    commits = OffsetCommits(lambda: consumer)
    commits.done("t", 0, 0)
    await asyncio.sleep(0.005)
    assert consumer.commits == [{A: 1}], "an idle consumer commits at once"
    for offset in range(1, 6):
        commits.done("t", 0, offset)
        await asyncio.sleep(committing.COMMIT_EVERY_S / 20)
    assert consumer.commits == [{A: 1}]
    await _settled(commits)
    await commits.stop()

    assert consumer.commits == [{A: 1}, {A: 6}]


async def test_a_partition_no_longer_assigned_is_not_committed() -> None:
    consumer = FakeConsumer({A})
    commits = OffsetCommits(lambda: consumer)
    commits.done("t", 0, 3)
    commits.done("t", 2, 7)
    await _settled(commits)
    await commits.stop()

    assert consumer.commits == [{A: 4}]


async def test_a_broker_failure_keeps_the_offsets_and_tries_again_with_the_newer_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(committing, "RETRY_S", 0.01)
    consumer = FakeConsumer({A, B})
    consumer.failures = [KafkaConnectionError("broker away")]
    commits = OffsetCommits(lambda: consumer)
    commits.done("t", 0, 1)
    commits.done("t", 1, 1)
    await asyncio.sleep(0)  # the commit task starts and fails
    commits.done("t", 0, 5)  # noted meanwhile: further on, it wins
    await _settled(commits)
    for _ in range(100):
        if consumer.commits:
            break
        await asyncio.sleep(0.01)
    await commits.stop()

    assert consumer.commits == [{A: 6, B: 2}]


async def test_a_commit_refused_after_a_rebalance_is_dropped_not_retried() -> None:
    consumer = FakeConsumer({A})
    consumer.failures = [CommitFailedError("the group rebalanced")]
    commits = OffsetCommits(lambda: consumer)
    commits.done("t", 0, 1)
    await _settled(commits)
    await asyncio.sleep(0.05)
    await commits.stop()

    assert consumer.commits == []
    assert commits.pending == {}


async def test_revoked_partitions_are_committed_first_then_forgotten() -> None:
    consumer = FakeConsumer({A, B})
    commits = OffsetCommits(lambda: consumer)
    consumer.hold = True
    commits.done("t", 0, 0)
    await asyncio.sleep(0.01)
    commits.done("t", 0, 1)  # noted while the first commit waits
    listener = CommitBeforeRevoke(commits)
    revoking = asyncio.create_task(listener.on_partitions_revoked({A}))
    await asyncio.sleep(0.01)
    consumer.hold = False
    consumer.release.set()
    await revoking
    await commits.stop()

    assert consumer.commits[-1] == {A: 2}
    assert commits.pending == {}


async def test_nothing_is_committed_without_a_consumer_yet() -> None:
    commits = OffsetCommits(lambda: None)
    commits.done("t", 0, 0)
    await asyncio.sleep(0.01)
    await commits.stop()

    assert commits.commits == 0


async def test_a_held_message_keeps_its_partitions_commit_below_it_until_released() -> None:
    """The messages after it are handled meanwhile; a crash delivers the held one again."""
    consumer = FakeConsumer({A, B})
    commits = OffsetCommits(lambda: consumer)
    commits.done("t", 0, 0)
    commits.done("t", 0, 1)
    release = commits.hold("t", 0, 2)
    for offset in range(2, 6):
        commits.done("t", 0, offset)
    commits.done("t", 1, 7)  # another partition is not held back
    await asyncio.sleep(committing.COMMIT_EVERY_S * 3)

    assert consumer.commits[-1] == {A: 2, B: 8}
    assert commits.held == {A: 2}
    assert commits.pending == {A: 6}, "what comes after the held message is kept for later"
    commits.done("t", 0, 6)
    await asyncio.sleep(committing.COMMIT_EVERY_S * 3)
    assert all(commit.get(A, 2) == 2 for commit in consumer.commits), "never past the held one"

    release()
    release()  # twice does nothing more
    await _settled(commits)
    await commits.stop()
    assert consumer.commits[-1] == {A: 7}
    assert commits.held == {}


async def test_of_two_held_messages_the_lower_one_bounds_the_commit() -> None:
    consumer = FakeConsumer({A})
    commits = OffsetCommits(lambda: consumer)
    first = commits.hold("t", 0, 3)
    second = commits.hold("t", 0, 5)
    commits.done("t", 0, 9)
    await asyncio.sleep(committing.COMMIT_EVERY_S * 2)
    assert consumer.commits == [{A: 3}]

    first()
    await asyncio.sleep(committing.COMMIT_EVERY_S * 2)
    assert consumer.commits[-1] == {A: 5}
    second()
    await _settled(commits)
    await commits.stop()
    assert consumer.commits[-1] == {A: 10}


async def test_a_hold_outlives_a_rebalance_that_gives_its_partition_back() -> None:
    """Read again from the held message, the handler drops it as already seen: were the hold
    dropped at the revoke, the commit would pass the message while its effects are to come."""
    consumer = FakeConsumer({A})
    commits = OffsetCommits(lambda: consumer)
    release = commits.hold("t", 0, 3)
    commits.done("t", 0, 4)
    await CommitBeforeRevoke(commits).on_partitions_revoked({A})
    assert consumer.commits == [{A: 3}]
    assert commits.pending == {}

    commits.done("t", 0, 3)  # assigned back: the held message again, dropped as a duplicate
    commits.done("t", 0, 4)
    await asyncio.sleep(committing.COMMIT_EVERY_S * 2)
    assert consumer.commits[-1] == {A: 3}
    release()
    await _settled(commits)
    await commits.stop()
    assert consumer.commits[-1] == {A: 5}
