"""The worker's wiring in memory (FastStream's TestKafkaBroker): same handlers, no broker."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.kafka import TestKafkaBroker
from faststream.message import StreamMessage

from discospace.actuator.app import create_app
from discospace.actuator.plugins import ActuatorConfigError
from discospace.actuator.settings import ActuatorSettings
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementStarted,
    decode,
    encode,
)


async def _event_of(message: StreamMessage[Any]) -> Event:
    return decode(message.body)


def _collector(sink: list[Event]):
    async def collect(event: Event) -> None:
        sink.append(event)

    return collect


def _settings(topics, **fields) -> ActuatorSettings:
    return ActuatorSettings(topic_prefix=topics.prefix, pool="p1", worker_id="w0", **fields)


async def test_a_request_on_the_pools_topic_is_answered_on_the_measurements_topic(
    topics, clock, make_request
):
    service = create_app(_settings(topics), clock=clock)
    answers: list[Event] = []
    service.broker.subscriber(topics.measurements, decoder=_event_of)(_collector(answers))
    request = make_request(pool="p1")

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(request), topics.measure("p1"), key=request.key())

    assert [type(event) for event in answers] == [MeasurementStarted, MeasurementCompleted]
    assert {event.request_id for event in answers} == {request.request_id}
    registry = service.metrics.registry
    labels = {"actuator": "synthetic", "outcome": "valid"}
    assert registry.get_sample_value("discospace_actuator_calls_total", labels) == 1


def test_a_worker_runs_one_consumer_of_the_pools_group_per_unit_of_concurrency(topics):
    service = create_app(_settings(topics, concurrency=3))

    consumers = [s for s in service.broker.subscribers if s.group_id is not None]
    assert len(consumers) == 3
    assert {s.group_id for s in consumers} == {f"{topics.prefix}.actuator.p1"}


def test_the_plugin_is_built_from_the_settings_parameters(topics):
    service = create_app(_settings(topics, parameters={"latency_s": 0.25, "seed": 3}))

    assert service.state.actuator.parameters.latency_s == 0.25
    assert service.state.actuator.parameters.seed == 3


def test_a_worker_configured_with_an_unknown_plugin_does_not_start(topics):
    with pytest.raises(ActuatorConfigError, match="No actuator plugin is named 'noop'"):
        create_app(_settings(topics, actuator="noop"))


def test_a_gpu_train_worker_with_more_than_one_measurement_at_once_does_not_start(topics):
    """Every child trained on cuda:0: throughput, memory and energy of a shared GPU, and an
    out-of-memory a sibling caused recorded as this entity's (invalid, memoised)."""
    with pytest.raises(ActuatorConfigError, match="measures on one whole GPU: run it with "):
        create_app(_settings(topics, actuator="gpu_train", concurrency=2))
    assert create_app(_settings(topics, actuator="gpu_train")).state.actuator.name == "gpu_train"


def test_a_worker_follows_the_operations_and_gives_its_consumers_time_for_a_measurement(topics):
    service = create_app(_settings(topics, concurrency=2, timeout="10min"))

    grouped = [s for s in service.broker.subscribers if s.group_id is not None]
    replaying = [s for s in service.broker.subscribers if s.group_id is None]
    assert [s._connection_args["max_poll_interval_ms"] for s in grouped] == [720_000] * 2
    assert [[t.name for t in s.topics] for s in replaying] == [[topics.operations]]


async def test_a_request_of_an_operation_cancelled_on_the_operations_topic_is_skipped(
    topics, clock, make_request, make_cancel
):
    service = create_app(_settings(topics), clock=clock)
    answers: list[Event] = []
    service.broker.subscriber(topics.measurements, decoder=_event_of)(_collector(answers))
    cancel, request = make_cancel("op-7"), make_request(pool="p1", operation="op-7")

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(cancel), topics.operations, key=cancel.key())
        await broker.publish(encode(request), topics.measure("p1"), key=request.key())

    [failed] = answers
    assert isinstance(failed, MeasurementFailed)
    assert (failed.request_id, failed.reason, failed.retryable) == (
        request.request_id,
        "operation cancelled",
        False,
    )
