"""Shutdown: an in-flight message is finished and committed, or handed back uncommitted."""

from __future__ import annotations

import asyncio

import pytest

from discospace.events import ActuatorRegistered
from discospace.runtime import ServiceSettings, create_service

pytestmark = pytest.mark.integration


def _slow_worker(kafka_bootstrap, topics, handling_s: float, graceful_timeout_s: float):
    settings = ServiceSettings(
        kafka_bootstrap_servers=kafka_bootstrap,
        topic_prefix=topics.prefix,
        graceful_timeout_s=graceful_timeout_s,
    )
    service = create_service(settings, description="A slow worker.")
    started: list[str] = []
    finished: list[str] = []

    @service.consumer(topics.actuators)
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        started.append(event.worker_id)
        await asyncio.sleep(handling_s)
        finished.append(event.worker_id)

    return service, started, finished


async def test_an_in_flight_message_is_finished_and_committed_before_the_service_stops(
    kafka, kafka_bootstrap, topics, run_service, wait_until, make_catalog
):
    service, started, finished = _slow_worker(kafka_bootstrap, topics, 1.0, 10.0)
    async with run_service(service):
        await kafka.publish(make_catalog("first"), topics=topics)
        await wait_until(lambda: started == ["first"])
    assert finished == ["first"]

    service, started, finished = _slow_worker(kafka_bootstrap, topics, 0.0, 10.0)
    async with run_service(service):
        await kafka.publish(make_catalog("second"), topics=topics)
        await wait_until(lambda: finished == ["second"])
    assert started == ["second"]


async def test_a_message_that_outlasts_the_grace_period_is_handed_back_and_redelivered(
    kafka, kafka_bootstrap, topics, run_service, wait_until, make_catalog
):
    service, started, finished = _slow_worker(kafka_bootstrap, topics, 30.0, 0.5)
    async with run_service(service):
        await kafka.publish(make_catalog("slow"), topics=topics)
        await wait_until(lambda: started == ["slow"])
    assert finished == []

    service, started, finished = _slow_worker(kafka_bootstrap, topics, 0.0, 10.0)
    async with run_service(service):
        await wait_until(lambda: finished == ["slow"])
