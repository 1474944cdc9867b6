"""Stalled consumers: the rules, the watch that applies them, /health and the gauge."""

from __future__ import annotations

import httpx
import pytest
from faststream.kafka import TestKafkaBroker

from discospace.events import ActuatorRegistered, encode
from discospace.runtime import ServiceSettings, create_service
from discospace.runtime.health import health_of
from discospace.runtime.stalls import (
    Delivery,
    Failing,
    Progress,
    StallRules,
    StallWatch,
    holding,
    not_moving,
    retrying,
)

from .conftest import make_probe

RULES = StallRules(after_s=60.0, failures=10)
KEY = ("discospace.registry", "discospace.space-submissions", 2)


class Clock:
    """Seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def watch(clock: Clock) -> StallWatch:
    return StallWatch(RULES, clock)


def test_a_message_is_retried_without_a_stall_up_to_the_number_of_failures_allowed():
    assert retrying(Failing(7, 0.0, 10, "E"), RULES, now_s=10.0) is None

    reason = retrying(Failing(7, 0.0, 11, "ConnectionError: down"), RULES, now_s=10.0)

    assert reason == (
        "the message at offset 7 failed 11 times in 10 s and is still retried "
        "(last error: ConnectionError: down)"
    )


def test_a_message_that_keeps_failing_for_the_stall_time_stalls_its_consumer_however_few_tries():
    assert retrying(Failing(7, 0.0, 2, "E"), RULES, now_s=59.0) is None
    assert retrying(Failing(7, 0.0, 2, "E"), RULES, now_s=60.0) is not None


def test_a_handler_may_hold_a_message_as_long_as_its_max_poll_interval_allows():
    actuator = Delivery(offset=3, since_s=0.0, allowed_s=3720.0)

    assert holding(actuator, RULES, now_s=3000.0) is None
    assert holding(actuator, RULES, now_s=3720.0) == (
        "a handler has held the message at offset 3 for 3720 s"
    )
    assert holding(Delivery(3, 0.0, 0.0), RULES, now_s=60.0) is not None


def test_an_idle_consumer_is_never_stalled_however_long_its_position_stays():
    idle = Progress(position=40, end=40, unmoved_since_s=0.0, seen_s=10_000.0)

    assert not_moving(idle, in_handler=False, rules=RULES) is None


def test_a_consumer_whose_position_stays_while_messages_wait_is_stalled():
    stuck = Progress(position=40, end=45, unmoved_since_s=0.0, seen_s=60.0)

    assert not_moving(stuck, in_handler=False, rules=RULES) == (
        "5 messages wait and its position (40) has not moved for 60 s"
    )
    assert not_moving(stuck, in_handler=True, rules=RULES) is None  # holding judges that


def test_a_consumer_reading_a_backlog_is_not_stalled(watch, clock):
    for position in range(0, 1000, 100):
        watch.saw(KEY, position, end=5000)
        clock.now_s += 30

    assert watch.stalls() == []


def test_a_position_that_stays_while_messages_wait_is_a_stall_after_the_stall_time(watch, clock):
    watch.saw(KEY, 40, end=45)
    clock.now_s += 55
    watch.saw(KEY, 40, end=45)
    assert watch.stalls() == []

    clock.now_s += 5
    watch.saw(KEY, 40, end=46)
    [stall] = watch.stalls()

    assert (stall.group, stall.topic, stall.partition, stall.offset) == (*KEY, 40)


def test_a_broker_outage_neither_makes_nor_clears_a_stall(watch, clock):
    watch.saw(KEY, 40, end=45)
    clock.now_s += 3600  # no pass could measure the lag meanwhile

    assert watch.stalls() == []


def test_the_same_message_failing_again_and_again_stalls_its_consumer_until_it_goes_through(
    watch, clock
):
    for _ in range(11):
        watch.delivered(KEY, 7)
        clock.now_s += 1
        watch.failed(KEY, 7, ConnectionError("the store did not answer"))

    [stall] = watch.stalls()
    assert stall.as_json() == {
        "group": "discospace.registry",
        "topic": "discospace.space-submissions",
        "partition": 2,
        "offset": 7,
        "reason": "the message at offset 7 failed 11 times in 10 s and is still retried "
        "(last error: ConnectionError: the store did not answer)",
    }

    watch.delivered(KEY, 7)
    watch.went_through(KEY)
    assert watch.stalls() == []


def test_a_failure_of_the_next_message_counts_from_one_again(watch):
    for _ in range(10):
        watch.failed(KEY, 7, ValueError("x"))
    watch.failed(KEY, 8, ValueError("x"))

    assert watch.failing[KEY].count == 1
    assert watch.stalls() == []


def test_a_partition_that_moved_to_another_member_is_forgotten(watch, clock):
    for _ in range(20):
        watch.failed(KEY, 7, ValueError("x"))
    assert watch.stalls() != []

    watch.keep_only([("discospace.registry", "discospace.space-submissions", 0)])

    assert watch.stalls() == []


def test_a_healthy_service_keeps_the_body_it_always_had(watch):
    assert health_of("registry", True, watch) == (
        200,
        {"service": "registry", "status": "ok", "kafka": "connected"},
    )


def test_a_stalled_consumer_makes_health_503_naming_it(watch):
    for _ in range(11):
        watch.failed(KEY, 7, ValueError("bad"))

    status, body = health_of("registry", True, watch)

    assert status == 503
    assert (body["status"], body["kafka"]) == ("stalled", "connected")
    assert [(s["group"], s["topic"], s["partition"]) for s in body["stalled"]] == [KEY]


async def on_announcement(event: ActuatorRegistered) -> None: ...


def _stalled(service, group: str, topic: str) -> float | None:
    labels = {"group": group, "topic": topic}
    return service.metrics.registry.get_sample_value("discospace_consumer_stalled", labels)


def test_the_stalled_gauge_lists_every_consumer_at_zero_from_the_start(topics):
    service = create_service(ServiceSettings(topic_prefix=topics.prefix), description="x")
    service.consumer(topics.actuators)(on_announcement)
    service.follow(topics.spaces)(on_announcement)

    assert _stalled(service, f"{topics.prefix}.service", topics.actuators) == 0
    assert _stalled(service, "service (no group)", topics.spaces) == 0


async def test_a_handler_failing_on_one_message_is_reported_stalled_and_healthy_once_it_passes(
    topics, make_announcement
):
    probe = make_probe(topics, stall_failures=2)
    service, group = probe.service, f"{topics.prefix}.service"
    probe.failures_left = 3
    message = encode(make_announcement())

    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(3):
            with pytest.raises(ConnectionError):
                await broker.publish(message, topics.actuators)
        stalled = service.stalls.stalls()
        gauge_while_stalled = _stalled(service, group, topics.actuators)
        await broker.publish(message, topics.actuators)

    [stall] = stalled
    assert (stall.group, stall.topic) == (group, topics.actuators)
    assert "failed 3 times" in stall.reason
    assert "ConnectionError: the store did not answer" in stall.reason
    assert gauge_while_stalled == 1
    assert service.stalls.stalls() == []
    assert _stalled(service, group, topics.actuators) == 0


async def test_health_answers_503_naming_the_stalled_consumer(topics):
    settings = ServiceSettings(topic_prefix=topics.prefix, health_timeout_s=0.2)
    service = create_service(settings, description="x")
    for _ in range(11):
        service.stalls.failed(KEY, 7, ValueError("bad"))
    transport = httpx.ASGITransport(app=service.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
        health = await client.get("/health")

    assert health.status_code == 503
    assert health.json()["stalled"][0]["group"] == "discospace.registry"


def test_a_failed_service_says_so_before_anything_else(watch):
    for _ in range(11):
        watch.failed(KEY, 7, ValueError("bad"))

    status, body = health_of("registry", True, watch, "an event was not confirmed")

    assert status == 503
    assert (body["status"], body["kafka"], body["reason"]) == (
        "failed",
        "connected",
        "an event was not confirmed",
    )
    assert len(body["stalled"]) == 1
