"""Actuator workers on the real broker: one consumer group per pool shares the requests, and
a request a killed worker was measuring goes to another worker of the pool."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest
from aiokafka.partitioner import murmur2

from discospace.actuator.app import create_app
from discospace.actuator.settings import ActuatorSettings
from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementFailed,
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
    """Wait until every consumer of the pool (each service's, all of them) holds a partition."""
    deadline = time.monotonic() + timeout_s
    members = [s for service in services for s in service.broker.subscribers if s.group_id]
    while True:
        held = [len(s.consumer.assignment()) for s in members if s.consumer is not None]
        if len(held) == len(members) and all(held):
            return
        assert time.monotonic() < deadline, f"partitions held: {held}"
        await asyncio.sleep(0.1)


def _on_each_partition(make_request, partitions: int = 3):
    """One request per partition of the measure topic (requests are keyed by entity id)."""
    chosen = {}
    for batch in range(1, 1000):
        request = make_request({"batch_size": batch}, pool=POOL)
        chosen.setdefault((murmur2(request.key()) & 0x7FFFFFFF) % partitions, request)
        if len(chosen) == partitions:
            return list(chosen.values())
    raise AssertionError("no key for every partition")


def _of(events, kind, operation=None):
    return [e for e in events if isinstance(e, kind) and operation in (None, e.operation_id)]


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


async def test_a_worker_with_a_concurrency_of_three_runs_three_measurements_at_once(
    kafka, kafka_bootstrap, topics, run_service, make_request
):
    requests = _on_each_partition(make_request)
    worker = _worker(kafka_bootstrap, topics, "w3", concurrency=3, parameters={"latency_s": 3})
    async with run_service(worker) as service:
        await _assigned(service)
        await kafka.publish(*requests, topics=topics)
        events = await kafka.wait_for(topics.measurements, lambda e: len(_completed(e)) >= 3)

    starts = [e.occurred_at for e in _of(events, MeasurementStarted)]
    ends = [e.occurred_at for e in _completed(events)]
    assert len(starts) == 3
    assert max(starts) < min(ends), "a measurement started only after another had finished"


async def test_cancelling_an_operation_lets_its_measurement_land_and_skips_its_queue_on_the_broker(
    kafka, kafka_bootstrap, topics, run_service, make_request, make_cancel
):
    requests = [make_request({"batch_size": n}, pool=POOL, operation="op-c") for n in (1, 2, 3)]
    later = [
        make_request(r.entity_values, pool=POOL, operation="op-later")
        for r in _on_each_partition(make_request)
    ]
    slow = {"latency_s": 4}
    async with run_service(_worker(kafka_bootstrap, topics, "w1", parameters=slow)) as first:
        await _assigned(first)
        await kafka.publish(*requests, topics=topics)
        await kafka.wait_for(topics.measurements, lambda e: len(_of(e, MeasurementStarted)) >= 1)
        await kafka.publish(make_cancel("op-c"), topics=topics)
        events = await kafka.wait_for(
            topics.measurements,
            lambda e: len(_of(e, MeasurementFailed)) + len(_completed(e)) >= 3,
            timeout_s=30,
        )
    async with run_service(_worker(kafka_bootstrap, topics, "w2")) as second:
        await _assigned(second)
        await kafka.publish(*later, topics=topics)
        after = await kafka.wait_for(topics.measurements, lambda e: len(_completed(e)) >= 4)

    [started] = _of(events, MeasurementStarted, "op-c")
    [landed] = [e for e in _completed(events) if e.operation_id == "op-c"]
    failures = _of(events, MeasurementFailed, "op-c")
    assert landed.request_id == started.request_id, "the started measurement did not land"
    assert sorted(f.request_id for f in [*failures, landed]) == sorted(
        r.request_id for r in requests
    )
    assert {(f.reason, f.retryable, f.worker_id) for f in failures} == {
        ("operation cancelled", False, "w1")
    }
    assert [e for e in after if e.operation_id == "op-c" and e.worker_id == "w2"] == [], (
        "the answered requests were not committed: another worker of the pool took them again"
    )
    assert second.state.metrics.value("discospace_measurement_requests_skipped_total") == 0


async def test_a_worker_process_survives_its_crashing_measurements_and_takes_its_child_along(
    kafka, topics, make_request, worker_process, tmp_path
):
    worker = worker_process(
        "isolated",
        DISCOSPACE_ACTUATOR_ACTUATOR="isolation_plugins:ChildPlugin",
        DISCOSPACE_ACTUATOR_PARAMETERS=json.dumps({"pid_dir": str(tmp_path)}),
        DISCOSPACE_ACTUATOR_TIMEOUT="30sec",
    )
    await kafka.wait_for(topics.actuators, lambda events: len(events) >= 1)

    def ask(behaviour):
        return make_request({"behaviour": behaviour}, pool=POOL, actuator="child-test",
                            experiment="behave")  # fmt: skip

    crash, fine, hang = ask("segfault"), ask("answer"), ask("hang")
    await kafka.publish(crash, fine, hang, topics=topics)
    events = await kafka.wait_for(
        topics.measurements,
        lambda e: len(_of(e, MeasurementFailed)) >= 1 and len(_completed(e)) >= 1
        and (tmp_path / hang.request_id).exists(),
        timeout_s=90,
    )  # fmt: skip
    child = int((tmp_path / hang.request_id).read_text())
    alive_before = _alive(child)
    worker.send_signal(signal.SIGKILL)
    worker.wait()

    [failed] = _of(events, MeasurementFailed)
    [completed] = _completed(events)
    assert (failed.request_id, failed.retryable) == (crash.request_id, True)
    assert "killed by signal SIGSEGV" in failed.reason
    assert (completed.request_id, completed.is_valid) == (fine.request_id, True)
    assert alive_before
    assert await _gone(child), "the measurement outlived its killed worker"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not _alive(pid)


async def test_a_worker_started_after_an_operation_was_cancelled_skips_its_requests_unstarted(
    kafka, kafka_bootstrap, topics, run_service, make_request, make_cancel
):
    """The cancellation comes after thousands of other operation events: a worker that took
    requests before it had folded the operations topic up to its end would start them."""
    noise = [make_cancel(f"op-noise-{n}") for n in range(10_000)]
    await kafka.publish_batched(*noise, make_cancel("op-gone"), topics=topics)
    requests = [make_request({"batch_size": n}, pool=POOL, operation="op-gone") for n in (1, 2, 3)]
    await kafka.publish(*requests, topics=topics)

    async with run_service(_worker(kafka_bootstrap, topics, "w9")) as worker:
        events = await kafka.wait_for(
            topics.measurements, lambda e: len(_of(e, MeasurementFailed)) >= 3
        )

    assert _of(events, MeasurementStarted) == []
    failures = _of(events, MeasurementFailed)
    assert sorted(f.request_id for f in failures) == sorted(r.request_id for r in requests)
    assert {(f.reason, f.retryable) for f in failures} == {("operation cancelled", False)}
    assert worker.state.metrics.value("discospace_measurement_requests_skipped_total") == 3
    assert len(worker.state.operations) == 10_001
