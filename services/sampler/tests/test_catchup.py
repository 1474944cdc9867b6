"""Requests wait until the replayed topics are read to where they ended at start."""

from __future__ import annotations

import asyncio

from aiokafka import ConsumerRecord
from faststream._internal.context.repository import ContextRepo

from discospace.sampler.catchup import CatchUp


def _record(topic: str, partition: int, offset: int) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(topic, partition, offset, 0, 0, b"k", b"v", None, 1, 1, ())


def test_a_sampler_that_noted_no_end_offsets_has_nothing_to_wait_for():
    assert CatchUp().caught_up


def test_it_is_caught_up_once_every_partition_is_read_to_its_end():
    catch_up = CatchUp()
    catch_up.arm({("m", 0): 3, ("m", 1): 1, ("s", 0): 0})

    assert catch_up.behind == {("m", 0): 3, ("m", 1): 1}
    catch_up.saw("m", 0, 2)
    assert not catch_up.caught_up
    assert catch_up.behind == {("m", 1): 1}
    catch_up.saw("m", 1, 0)
    assert catch_up.caught_up


def test_messages_read_before_the_ends_were_noted_count():
    catch_up = CatchUp()
    catch_up.saw("m", 0, 4)

    catch_up.arm({("m", 0): 5})

    assert catch_up.caught_up


def test_an_older_offset_read_again_does_not_move_the_position_back():
    catch_up = CatchUp()
    catch_up.arm({("m", 0): 5})
    catch_up.saw("m", 0, 4)
    catch_up.saw("m", 0, 1)

    assert catch_up.caught_up


async def test_waiting_ends_when_the_last_message_is_read():
    catch_up = CatchUp()
    catch_up.arm({("m", 0): 2})

    waiting = asyncio.create_task(catch_up.wait(5.0))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    catch_up.saw("m", 0, 1)

    assert await waiting is True


async def test_waiting_gives_up_after_its_time_limit():
    catch_up = CatchUp()
    catch_up.arm({("m", 0): 2})

    assert await catch_up.wait(0.05) is False


async def test_the_broker_middleware_reports_every_consumed_message_whatever_happened():
    catch_up = CatchUp()
    catch_up.arm({("m", 0): 1})
    middleware = catch_up.middleware(_record("m", 0, 0), context=ContextRepo())

    suppressed = await middleware.after_processed(ValueError, ValueError("bad"), None)

    assert suppressed is False
    assert catch_up.caught_up
