"""Actuator workers on the real broker: one consumer group per pool shares the requests, and
a request a killed worker was measuring goes to another worker of the pool."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from discospace.actuator.app import create_app
from discospace.actuator.settings import ActuatorSettings
from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementStarted,
)

pytestmark = pytest.mark.integration

POOL = "p1"


def _worker(kafka_bootstrap, topics, worker_id, **fields):
    settings = ActuatorSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        pool=POOL,
        worker_id=worker_id,
        **fields,
    )
    return create_app(settings)


def _completed(events, worker_id=None):
    return [
        e
        for e in events
        if isinstance(e, MeasurementCompleted) and worker_id in (None, e.worker_id)
    ]


async def _assigned(*services, timeout_s: float = 30.0) -> None:
    """Wait until every service's consumer of the pool holds at least one partition."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = [
            len(subscriber.consumer.assignment())
            for service in services
            for subscriber in service.broker.subscribers
            if subscriber.group_id is not None and subscriber.consumer is not None
        ]
        if len(held) == len(services) and all(held):
            return
        assert time.monotonic() < deadline, f"partitions held: {held}"
        await asyncio.sleep(0.1)


async def test_a_worker_announces_its_catalog_and_answers_its_pools_requests(
    kafka, kafka_bootstrap, topics, run_service, make_request
):
    request = make_request(pool=POOL)
    async with run_service(_worker(kafka_bootstrap, topics, "w0", gpu_model="A100")):
        [announced] = await kafka.wait_for(topics.actuators, lambda events: len(events) >= 1)
        await kafka.publish(request, topics=topics)
        answers = await kafka.wait_for(topics.measurements, lambda e: len(_completed(e)) >= 1)

    assert isinstance(announced, ActuatorRegistered)
    assert (announced.pool, announced.gpu_model, announced.worker_id) == (POOL, "A100", "w0")
    assert [type(e) for e in answers] == [MeasurementStarted, MeasurementCompleted]
    assert {e.request_id for e in answers} == {request.request_id}


async def test_two_workers_of_a_pool_share_its_requests_and_each_is_measured_once(
    kafka, kafka_bootstrap, topics, run_service, make_request
):
    requests = [make_request({"batch_size": n}, pool=POOL) for n in range(1, 31)]
    async with (
        run_service(_worker(kafka_bootstrap, topics, "w1")) as first,
        run_service(_worker(kafka_bootstrap, topics, "w2")) as second,
    ):
        await _assigned(first, second)
        await kafka.publish(*requests, topics=topics)
        events = await kafka.wait_for(topics.measurements, lambda e: len(_completed(e)) >= 30)
        await asyncio.sleep(1)
        calls = [
            service.state.metrics.calls_with("synthetic", "valid") for service in (first, second)
        ]

    completed = _completed(events)
    assert sorted(e.request_id for e in completed) == sorted(r.request_id for r in requests)
    assert {e.worker_id for e in completed} == {"w1", "w2"}
    assert sum(calls) == 30
    assert all(calls)


async def test_a_request_a_killed_worker_was_measuring_is_measured_by_another_of_the_pool(
    kafka, kafka_bootstrap, topics, run_service, make_request, worker_process
):
    slow = worker_process("slow", DISCOSPACE_ACTUATOR_PARAMETERS='{"latency_s": 300}')
    await kafka.wait_for(topics.actuators, lambda events: len(events) >= 1)
    request = make_request(pool=POOL)
    await kafka.publish(request, topics=topics)
    await kafka.wait_for(
        topics.measurements,
        lambda e: any(isinstance(x, MeasurementStarted) and x.worker_id == "slow" for x in e),
    )

    slow.send_signal(signal.SIGKILL)
    slow.wait()
    async with run_service(_worker(kafka_bootstrap, topics, "fast")):
        events = await kafka.wait_for(
            topics.measurements, lambda e: len(_completed(e, "fast")) >= 1, timeout_s=90
        )

    [completed] = _completed(events)
    assert (completed.worker_id, completed.request_id) == ("fast", request.request_id)
