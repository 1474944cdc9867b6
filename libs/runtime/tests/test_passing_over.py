"""Which records a consumer passes over before FastStream's pipeline (`Consumer._passed_over`):
valid events of a type none of its handlers takes, and nothing else."""

from __future__ import annotations

from aiokafka import ConsumerRecord
from faststream.kafka import KafkaBroker

from discospace.events import (
    ActuatorRegistered,
    OperationCancelRequested,
    encode,
    new_event,
)
from discospace.runtime.consuming import Consumer
from discospace.runtime.metrics import RuntimeMetrics

TOPIC = "t"


def _record(value: bytes, offset: int = 5) -> ConsumerRecord:
    return ConsumerRecord(TOPIC, 0, offset, 0, 0, None, value, None, 0, len(value), ())


def _announcement() -> bytes:
    event = new_event(ActuatorRegistered, actuator="a", pool="p", experiments=(), worker_id="w")
    return encode(event)


def _cancel() -> bytes:
    return encode(new_event(OperationCancelRequested, operation_id="op-1", requested_by="me"))


def _consumer(told: list[tuple[str, int, int]]) -> Consumer:
    consumer = Consumer(
        KafkaBroker(),
        TOPIC,
        group_id=None,
        metrics=RuntimeMetrics.create("t"),
        passed_over=[lambda *position: told.append(position)],
    )

    @consumer
    async def on_announced(event: ActuatorRegistered) -> None: ...

    consumer.subscriber.running = True  # as once the broker started it
    return consumer


def _ignored(consumer: Consumer, event_type: str) -> float:
    sample = consumer.metrics.registry.get_sample_value(
        "discospace_ignored_events_total", {"event_type": event_type}
    )
    return sample or 0.0


def test_a_valid_event_no_handler_takes_is_passed_over_counted_and_told() -> None:
    told: list[tuple[str, int, int]] = []
    consumer = _consumer(told)
    registered = _cancel()

    assert consumer._passed_over(_record(registered))
    assert told == [(TOPIC, 0, 5)]
    assert _ignored(consumer, "OperationCancelRequested") == 1


def test_an_event_a_handler_takes_or_a_record_that_does_not_decode_goes_the_usual_way() -> None:
    told: list[tuple[str, int, int]] = []
    consumer = _consumer(told)
    announced = _announcement()
    # Names a type no handler takes first, but JSON's last "type" wins when it is read.
    two_types = (
        announced.replace(b'"type":"ActuatorRegistered"', b'"type":"OperationCancelRequested"', 1)[
            :-1
        ]
        + b',"type":"ActuatorRegistered"}'
    )
    broken = _cancel().replace(b'"requested_by":', b'"requested_for":')

    for value in (announced, two_types, broken, b"not an event"):
        assert not consumer._passed_over(_record(value)), value
    assert told == []


def test_a_record_below_where_the_start_up_fold_stopped_goes_the_usual_way() -> None:
    told: list[tuple[str, int, int]] = []
    consumer = _consumer(told)
    registered = _cancel()
    consumer.start_at({(TOPIC, 0): 5})

    assert not consumer._passed_over(_record(registered, offset=4))
    assert consumer._passed_over(_record(registered, offset=5))
    assert told == [(TOPIC, 0, 5)]
