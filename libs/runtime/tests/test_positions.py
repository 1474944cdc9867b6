"""How far a service has read each partition, and waiting until it has read up to a point."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from faststream.kafka import TestKafkaBroker

from discospace.events import ActuatorRegistered, TopicNames, encode
from discospace.runtime import ServiceSettings, create_service
from discospace.runtime.positions import ReadPositions

from .conftest import announcement, fixed_clock


def test_a_partition_is_behind_until_its_message_before_the_end_is_read():
    positions = ReadPositions()
    positions.saw("m", 0, 1)

    assert positions.behind({("m", 0): 3, ("m", 1): 1}) == {("m", 0): 1, ("m", 1): 1}
    positions.saw("m", 0, 2)
    positions.saw("m", 1, 0)
    assert positions.behind({("m", 0): 3, ("m", 1): 1}) == {}
    assert positions.position("m", 0) == 3


def test_an_older_offset_read_again_does_not_move_a_position_back():
    positions = ReadPositions()
    positions.saw("m", 0, 4)
    positions.saw("m", 0, 1)

    assert positions.position("m", 0) == 5


async def test_waiting_ends_once_every_partition_is_read_to_its_end():
    positions = ReadPositions()
    waiting = asyncio.create_task(positions.wait_until({("m", 0): 2, ("s", 0): 1}))
    positions.saw("m", 0, 1)
    await asyncio.sleep(0.01)
    assert not waiting.done()

    positions.saw("s", 0, 0)
    await asyncio.wait_for(waiting, 1)


@pytest.mark.parametrize(
    ("fails", "read"),
    [(None, 1), (ConnectionError, 0), (ValueError, 1)],
    ids=["handled", "to-come-again", "dead-lettered"],
)
async def test_a_message_counts_as_read_once_done_with_not_while_it_is_to_come_again(fails, read):
    """A handler that failed hands its message back: delivered again, it is not read yet (the
    explorer waits for the previous owner's decisions to be folded before deciding); one set
    aside on the dead-letter topic is done with."""
    topics = TopicNames.unique("positions")
    service = create_service(
        ServiceSettings(topic_prefix=topics.prefix, retry_backoff_s=0, handler_max_attempts=1),
        description="positions",
        clock=fixed_clock,
    )
    positions = ReadPositions()
    service.done_with.append(positions.saw)

    @service.follow(topics.operations)
    async def handle(event: ActuatorRegistered) -> None:
        if fails is not None:
            raise fails("the store did not answer")

    async with TestKafkaBroker(service.broker) as broker:
        with contextlib.suppress(ConnectionError):
            await broker.publish(encode(announcement("x")), topics.operations, partition=0)

    assert positions.position(topics.operations, 0) == read
