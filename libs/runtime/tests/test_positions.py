"""How far a service has read each partition, and waiting until it has read up to a point."""

from __future__ import annotations

import asyncio

from aiokafka import ConsumerRecord
from faststream._internal.context.repository import ContextRepo

from discospace.runtime.positions import ReadPositions


def _record(topic: str, partition: int, offset: int) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(topic, partition, offset, 0, 0, b"k", b"v", None, 1, 1, ())


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


async def test_the_broker_middleware_reports_every_consumed_message_whatever_happened():
    positions = ReadPositions()
    middleware = positions.middleware(_record("m", 2, 7), context=ContextRepo())

    suppressed = await middleware.after_processed(ValueError, ValueError("bad"), None)

    assert suppressed is False
    assert positions.position("m", 2) == 8
