"""A reader whose consumer cannot start is stopped all the same: nothing is left open."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaConnectionError

from discospace.runtime import positions, replay
from discospace.testing.kafka import free_port


class _Made(AIOKafkaConsumer):
    """An aiokafka consumer that remembers every one made, and whether it was stopped."""

    made: list[_Made] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stopped = False
        _Made.made.append(self)

    async def stop(self) -> None:
        self.stopped = True
        await super().stop()


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[_Made]:
    _Made.made = []
    monkeypatch.setattr(replay, "AIOKafkaConsumer", _Made)
    monkeypatch.setattr(positions, "AIOKafkaConsumer", _Made)
    return _Made.made


async def test_a_reader_whose_broker_cannot_be_reached_stops_its_consumer(made):
    nowhere = f"127.0.0.1:{free_port()}"

    with pytest.raises(KafkaConnectionError):
        async with replay.reader(nowhere, "discospace-test"):
            pass

    assert [consumer.stopped for consumer in made] == [True]


async def test_end_offsets_stop_their_consumer_when_its_start_fails(made, monkeypatch):
    nowhere = f"127.0.0.1:{free_port()}"

    async def some_partition(*_: object) -> list[Any]:
        return [replay.TopicPartition("t", 0)]

    monkeypatch.setattr(positions, "existing_partitions", some_partition)
    with pytest.raises(KafkaConnectionError):
        await positions.end_offsets(nowhere, ["t"])

    assert [consumer.stopped for consumer in made] == [True]
