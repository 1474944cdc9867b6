"""The sampler's handlers in memory (FastStream's TestKafkaBroker): same wiring, no broker."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.kafka import TestKafkaBroker
from faststream.message import StreamMessage

from discospace.core import ExperimentRef
from discospace.events import (
    Event,
    MeasurementRequested,
    MeasurementReused,
    SamplesDrawn,
    decode,
    encode,
)
from discospace.runtime import TransientError
from discospace.sampler.app import create_app
from discospace.sampler.settings import SamplerSettings

PROFILE = ExperimentRef(actuator="synthetic", experiment="profile")
BENCH = ExperimentRef(actuator="synthetic", experiment="bench")


async def _event_of(message: StreamMessage[Any]) -> Event:
    return decode(message.body)


def _sampler_with_outputs(topics, clock):
    service = create_app(
        SamplerSettings(
            topic_prefix=topics.prefix, space_wait_s=0.2, retry_backoff_s=0, first_request_wait_s=0
        ),
        clock=clock,
    )
    outputs: dict[str, list[Event]] = {}
    for topic in (topics.operations, topics.measurements, topics.measure("a100")):
        outputs[topic] = []
        service.broker.subscriber(topic, decoder=_event_of)(_collector(outputs[topic]))
    return service, outputs


def _collector(sink: list[Event]):
    async def collect(event: Event) -> None:
        sink.append(event)

    return collect


def _metric(service, name: str, **labels: str) -> float | None:
    return service.metrics.registry.get_sample_value(name, labels)


async def test_a_request_is_answered_with_draws_reuses_and_requests_to_the_pools_topic(
    topics, clock, make
):
    service, outputs = _sampler_with_outputs(topics, clock)
    space = make.registered()
    measured = {"batch_size": 2, "gpu_model": "A100"}
    fresh = {"batch_size": 4, "gpu_model": "A100"}
    memo = make.completed(measured)
    request = make.request(space, points=(measured, fresh), experiments=(BENCH,))

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(space), topics.spaces)
        await broker.publish(encode(make.pool("a100", "A100")), topics.actuators)
        await broker.publish(encode(memo), topics.measurements)
        await broker.publish(encode(request), topics.operations)

    drawn = [e for e in outputs[topics.operations] if isinstance(e, SamplesDrawn)]
    reused = [e for e in outputs[topics.measurements] if isinstance(e, MeasurementReused)]
    requested = outputs[topics.measure("a100")]
    assert [d.entity_ids for d in drawn] == [(memo.entity_id, requested[0].entity_id)]
    assert [(r.entity_values, r.reused_event_id) for r in reused] == [(measured, memo.event_id)]
    assert [type(r) for r in requested] == [MeasurementRequested]
    assert requested[0].entity_values == fresh
    assert _metric(service, "discospace_memo_hits_total") == 1
    assert _metric(service, "discospace_samples_drawn_total") == 2
    assert _metric(service, "discospace_measurements_requested_total", pool="a100") == 1
    assert _metric(service, "discospace_memo_entries") == 1


async def test_a_request_for_a_space_never_registered_is_handed_back_not_answered(
    topics, clock, make
):
    """The in-memory broker cannot tell how much of the spaces topic is unread, so the request
    is handed back as waiting for it (on a real broker, read up to its end, it is dead-lettered:
    tests/integration)."""
    service, outputs = _sampler_with_outputs(topics, clock)

    async with TestKafkaBroker(service.broker) as broker:
        with pytest.raises(TransientError, match="is not read yet"):
            await broker.publish(encode(make.request(make.registered())), topics.operations)

    assert [e for e in outputs[topics.operations] if isinstance(e, SamplesDrawn)] == []
    assert _metric(service, "discospace_handler_failures_total", exception="TransientError")


async def test_of_two_requests_for_one_index_only_the_first_is_answered(topics, clock, make):
    service, outputs = _sampler_with_outputs(topics, clock)
    space = make.registered()
    first = make.request(space, request_index=0, count=1)
    rival = make.request(space, request_index=0, count=3)
    again = first.model_copy(update={"occurred_at": make.at.replace(year=2030)})

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(space), topics.spaces)
        await broker.publish(encode(make.pool("a100")), topics.actuators)
        for request in (first, rival, again):
            await broker.publish(encode(request), topics.operations)

    drawn = [e for e in outputs[topics.operations] if isinstance(e, SamplesDrawn)]
    assert [(d.causation_id, len(d.entity_ids)) for d in drawn] == [(first.event_id, 1)]
    assert _metric(service, "discospace_sampler_conflicting_requests_total") == 1
