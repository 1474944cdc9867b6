"""The sampler on the real broker: it folds the memo at start, then answers, routes and reuses."""

from __future__ import annotations

import pytest

from discospace.core import ExperimentRef
from discospace.events import (
    MeasurementRequested,
    MeasurementReused,
    OperationCancelRequested,
    SamplesDrawn,
)
from discospace.events.factory import new_event
from discospace.sampler.app import create_app
from discospace.sampler.settings import SamplerSettings

pytestmark = pytest.mark.integration

BENCH = ExperimentRef(actuator="synthetic", experiment="bench")
MEASURED = {"batch_size": 2, "gpu_model": "A100"}
FRESH_A100 = {"batch_size": 4, "gpu_model": "A100"}
FRESH_H100 = {"batch_size": 4, "gpu_model": "H100"}


def _sampler(kafka_bootstrap, topics):
    settings = SamplerSettings(
        kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix, retry_backoff_s=0.2
    )
    return create_app(settings)


def _history(make):
    space = make.registered()
    memo = make.completed(MEASURED, values={"throughput": 77.5})
    pools = (make.pool("a100", "A100"), make.pool("h100", "H100"))
    request = make.request(space, points=(MEASURED, FRESH_A100, FRESH_H100), experiments=(BENCH,))
    return space, memo, pools, request


async def test_a_started_sampler_replays_the_memo_then_answers_with_reuses_and_routed_requests(
    kafka, kafka_bootstrap, topics, run_service, make
):
    """The memo of interest comes last, after thousands: a sampler that answered before its
    start-up fold reached the end of the topics would measure it again."""
    space, memo, pools, request = _history(make)
    others = [make.completed({"batch_size": 1000 + n, "gpu_model": "A100"}) for n in range(3000)]
    await kafka.publish(space, *pools, request, topics=topics)
    await kafka.publish(*others, memo, topics=topics)

    async with run_service(_sampler(kafka_bootstrap, topics)):
        to_a100 = await kafka.read_settled(topics.measure("a100"), at_least=1)
        to_h100 = await kafka.read_settled(topics.measure("h100"), at_least=1)
        measurements = await kafka.read_settled(topics.measurements, at_least=2)
        operations = await kafka.read_settled(topics.operations, at_least=2)

    assert [(type(e), e.entity_values) for e in to_a100] == [(MeasurementRequested, FRESH_A100)]
    assert [(type(e), e.entity_values) for e in to_h100] == [(MeasurementRequested, FRESH_H100)]
    [reused] = [e for e in measurements if isinstance(e, MeasurementReused)]
    assert (reused.entity_values, reused.values, reused.reused_event_id) == (
        MEASURED,
        {"throughput": 77.5},
        memo.event_id,
    )
    assert not [e for e in measurements if isinstance(e, MeasurementRequested)]
    [drawn] = [e for e in operations if isinstance(e, SamplesDrawn)]
    assert len(drawn.entity_ids) == 3
    assert drawn.causation_id == request.event_id


async def test_a_request_delivered_again_to_a_restarted_sampler_yields_the_same_events(
    kafka, kafka_bootstrap, topics, run_service, make
):
    space, memo, pools, request = _history(make)
    await kafka.publish(space, memo, *pools, request, topics=topics)
    async with run_service(_sampler(kafka_bootstrap, topics)):
        first = await kafka.read_settled(topics.measure("a100"), at_least=1)

    await kafka.publish(request, topics=topics)
    async with run_service(_sampler(kafka_bootstrap, topics)):
        both = await kafka.read_settled(topics.measure("a100"), at_least=2)
        operations = await kafka.read_settled(topics.operations, at_least=3)

    assert len(first) == 1
    assert [e.event_id for e in both] == [first[0].event_id] * 2
    drawn = {e.event_id for e in operations if isinstance(e, SamplesDrawn)}
    assert len(drawn) == 1


async def test_a_restarted_sampler_knows_the_first_request_of_a_slot_before_answering_any(
    kafka, kafka_bootstrap, topics, run_service, make
):
    """A restarted sampler's group consumer resumes after the last request it answered, while
    its replay of the operations topic starts from the beginning, behind thousands of other
    events. A rival request for a slot already answered (a late decision of an explorer replica
    that lost its partitions) is still refused, and the next request answered."""
    space, _, pools, _ = _history(make)
    first = make.request(space, points=(FRESH_A100,), experiments=(BENCH,))
    rival = first.model_copy(update={"points": (FRESH_H100,)})
    following = make.request(space, request_index=1, points=(MEASURED,), experiments=(BENCH,))
    noise = [
        new_event(OperationCancelRequested, operation_id=f"op-noise-{n}", requested_by="test")
        for n in range(3_000)
    ]
    await kafka.publish(space, *pools, topics=topics)
    await kafka.publish_batched(*noise, topics=topics)
    await kafka.publish(first, topics=topics)
    settings = SamplerSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        first_request_wait_s=0,
    )
    async with run_service(create_app(settings)):
        await kafka.read_settled(topics.measure("a100"), at_least=1)

    await kafka.publish(rival, following, topics=topics)
    async with run_service(create_app(settings)):
        to_a100 = await kafka.read_settled(topics.measure("a100"), at_least=2)
        to_h100 = await kafka.read_settled(topics.measure("h100"), settle_s=1.0)

    assert [e.entity_values for e in to_a100] == [FRESH_A100, MEASURED]
    assert to_h100 == []


async def test_a_request_waiting_for_a_measurement_in_flight_does_not_hold_up_other_operations(
    kafka, kafka_bootstrap, topics, run_service, make
):
    """op-a's pair is in flight for op-0 (sent to a pool, not measured yet): op-a waits for it,
    up to in_flight_wait_s (60 s), and op-b's request, read after it, is answered meanwhile
    (waiting in the handler held up every later request of the sampler for that long)."""
    space = make.registered()
    pool = make.pool("a100", "A100")
    for_op_0, for_op_a = (
        make.request(space, operation_id=op, points=(FRESH_A100,)) for op in ("op-0", "op-a")
    )
    for_op_b = make.request(space, operation_id="op-b", points=(MEASURED,))
    await kafka.publish(space, pool, for_op_0, topics=topics)
    async with run_service(_sampler(kafka_bootstrap, topics)):
        await kafka.wait_for(topics.measure("a100"), lambda events: len(events) == 1, 30)
        await kafka.publish(for_op_a, topics=topics)
        await kafka.wait_for(  # op-a is answered with its draw, and waits for its pair
            topics.operations,
            lambda events: any(
                isinstance(e, SamplesDrawn) and e.operation_id == "op-a" for e in events
            ),
            20,
        )
        await kafka.publish(for_op_b, topics=topics)
        sent = await kafka.wait_for(topics.measure("a100"), lambda events: len(events) == 2, 20)
        assert sorted(e.operation_id for e in sent) == ["op-0", "op-b"]
        reused = await kafka.read_settled(topics.measurements, settle_s=0.5)
        assert not [e for e in reused if e.operation_id == "op-a"], "op-a still waits"

        await kafka.publish(make.completed(FRESH_A100, operation="op-0"), topics=topics)
        landed = await kafka.wait_for(
            topics.measurements,
            lambda events: any(isinstance(e, MeasurementReused) for e in events),
            20,
        )
    [answer] = [e for e in landed if isinstance(e, MeasurementReused)]
    assert (answer.operation_id, answer.entity_values) == ("op-a", FRESH_A100)


async def test_a_request_for_a_space_the_spaces_topic_never_held_is_dead_lettered(
    kafka, kafka_bootstrap, topics, run_service, make
):
    """Read up to the end of the spaces topic, the sampler knows the space is unknown: the
    request is set aside with its reason, and the next request is answered."""
    space, _, pools, request = _history(make)
    never = make.registered(make.space_spec(batch_sizes=(16, 32)))  # never published
    unknown = make.request(never, operation_id="op-unknown")
    settings = SamplerSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        retry_backoff_s=0.1,
        space_wait_s=0.2,
        handler_max_attempts=2,
    )
    await kafka.publish(space, *pools, topics=topics)
    await kafka.publish(unknown, request, topics=topics)

    async with run_service(create_app(settings)):
        [letter] = await kafka.read_events(topics.dead_letter, 1)
        operations = await kafka.read_settled(topics.operations, at_least=3)

    assert "is not registered" in letter.reason
    [drawn] = [e for e in operations if isinstance(e, SamplesDrawn)]
    assert drawn.causation_id == request.event_id
