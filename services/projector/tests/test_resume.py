"""Resuming from the store's offsets when partitions are assigned."""

from __future__ import annotations

import logging

import pytest
from aiokafka import TopicPartition

from discospace.projector.consuming import ResumeFromStore

SPACES = TopicPartition("d.spaces", 0)
OPERATIONS = TopicPartition("d.operations", 1)


class FakeConsumer:
    def __init__(self, ends: dict[TopicPartition, int]) -> None:
        self.ends = ends
        self.seeks: dict[TopicPartition, int] = {}
        self.from_start: list[TopicPartition] = []

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self.seeks[partition] = offset

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self.from_start += partitions

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {partition: self.ends[partition] for partition in partitions}


class FakeStore:
    def __init__(self, positions: dict[tuple[str, int], int]) -> None:
        self._positions = positions

    def positions(self) -> dict[tuple[str, int], int]:
        return dict(self._positions)

    async def reload_positions(self) -> None:
        return None


class FakeBuffer:
    async def flush(self) -> None:
        return None


async def test_a_recorded_offset_beyond_the_end_of_its_log_is_an_error_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Kafka made anew (a topic deleted and created again) under a kept store: the events
    below the store's offset were taken as read and never projected, in silence."""
    consumer = FakeConsumer({SPACES: 10, OPERATIONS: 500})
    store = FakeStore({("d.spaces", 0): 54, ("d.operations", 1): 300})
    resume = ResumeFromStore(store, FakeBuffer(), lambda: consumer)  # type: ignore[arg-type]

    with caplog.at_level(logging.INFO, logger="discospace.projector"):
        await resume.on_partitions_assigned({SPACES, OPERATIONS})

    assert consumer.seeks == {SPACES: 54, OPERATIONS: 300}
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert errors[0].startswith(
        "the store recorded offset 54 of d.spaces/0, beyond the end of its log (10)"
    )
