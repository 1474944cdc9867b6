"""A follower drops what the start-up fold read and hands its handlers the rest, unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import ConsumerRecord
from faststream._internal.context.repository import ContextRepo

from discospace.events import ActuatorRegistered, SpaceRegistered, encode
from discospace.runtime import ServiceSettings, WiringError, create_service
from discospace.runtime.consuming import AlreadyFolded
from discospace.runtime.folding import fold_then_follow


def _record(topic: str, partition: int, offset: int, value: bytes = b"v") -> Any:
    return ConsumerRecord(topic, partition, offset, 0, 0, b"k", value, None, 1, 1, ())


class _Message:
    """What the decoder is given: the raw record and its body."""

    def __init__(self, record: Any) -> None:
        self.raw_message = record
        self.body = record.value


def _service(topics):
    return create_service(ServiceSettings(topic_prefix=topics.prefix), description="x")


async def test_a_follower_refuses_a_message_below_where_the_fold_stopped_and_takes_the_rest(
    topics, make_announcement
):
    follower = _service(topics).follow(topics.actuators)

    @follower
    async def on_actuator_registered(event: ActuatorRegistered) -> None: ...

    follower.start_at({(topics.actuators, 0): 2})
    announced = make_announcement()
    at = (topics.actuators, 0)

    with pytest.raises(AlreadyFolded):
        await follower.decoder(_Message(_record(*at, 1, encode(announced))))
    assert await follower.decoder(_Message(_record(*at, 2, encode(announced)))) == announced
    later = _record(topics.actuators, 1, 0, encode(announced))
    assert await follower.decoder(_Message(later)) == announced


async def test_a_message_folded_already_is_passed_over_without_a_dead_letter(topics, probe, metric):
    service = probe.service
    policy = next(m for m in service.broker.middlewares if type(m).__name__ == "DeadLetterPolicy")
    middleware = policy(_record(topics.actuators, 0, 0), context=ContextRepo())

    suppressed = await middleware.after_processed(AlreadyFolded, AlreadyFolded(), None)

    assert suppressed is True
    assert metric(service, "discospace_dead_lettered_total", reason_kind="malformed") == 0
    assert metric(service, "discospace_ignored_events_total", event_type="unknown") == 0


async def test_an_event_read_at_start_goes_to_the_first_handler_of_its_type_once(
    topics, make_announcement
):
    follower = _service(topics).follow(topics.actuators)
    taken: list[ActuatorRegistered] = []

    @follower
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        taken.append(event)

    announced = make_announcement()

    assert await follower.take(announced) is True
    assert await follower.take(announced) is True
    assert taken == [announced]


async def test_an_event_no_handler_takes_is_not_taken(topics, make_announcement):
    follower = _service(topics).follow(topics.spaces)

    @follower
    async def on_space_registered(event: SpaceRegistered) -> None: ...

    assert await follower.take(make_announcement()) is False


def test_a_service_folds_all_its_followers_in_one_start_up_hook(topics):
    service = _service(topics)
    hooks = len(service.app._on_startup_calling)

    service.follow(topics.actuators)
    service.follow(topics.spaces)

    assert len(service.app._on_startup_calling) == hooks + 1
    assert [f.subscriber.group_id for f in service.followers] == [None, None]


async def test_only_consumers_without_a_group_can_follow(topics):
    grouped = _service(topics).consumer(topics.actuators)

    with pytest.raises(WiringError, match="without a group"):
        await fold_then_follow("127.0.0.1:1", grouped)
