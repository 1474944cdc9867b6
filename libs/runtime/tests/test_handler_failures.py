"""A handler that fails: a dependency down is retried without bound, anything else a bounded
number of times and then dead-lettered (the classification, the policy, in memory)."""

from __future__ import annotations

import asyncio
import errno
import gzip
import logging
import socket
import time
from dataclasses import dataclass, field

import pytest
from aiokafka import errors as kafka_errors
from faststream.kafka import TestKafkaBroker

from discospace.events import (
    ActuatorRegistered,
    DeadLettered,
    Event,
    EventTooLargeError,
    TopicNames,
    encode,
)
from discospace.runtime import (
    RetryPolicy,
    Service,
    ServiceSettings,
    TransientError,
    create_service,
    is_transient,
)
from discospace.runtime.consuming import HandlerCancelledError
from discospace.runtime.deadletter import DeadLetterPolicy, pause
from discospace.runtime.failures import Attempts, settle

from .conftest import announcement, event_of, fixed_clock, sample

logger = logging.getLogger("test")


class DatabaseError(Exception):
    """A DB-API driver's base class."""


class OperationalError(DatabaseError):
    """A DB-API driver's error for a server that went away."""


class StoreUnreachableError(Exception):
    """How a store library says the store did not answer (raised from the driver's error)."""


def _raised_from(error: BaseException, cause: BaseException) -> BaseException:
    try:
        raise error from cause
    except BaseException as raised:
        return raised


def _raised_while_handling(error: BaseException, context: BaseException) -> BaseException:
    try:
        try:
            raise context
        except BaseException:
            raise error  # noqa: B904 - the implicit context is what the test is about
    except BaseException as raised:
        return raised


@pytest.mark.parametrize(
    "error",
    [
        TransientError("the store is restarting"),
        ConnectionError("the store did not answer"),
        ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
        TimeoutError(),
        OSError(errno.EHOSTUNREACH, "no route to host"),
        socket.gaierror(socket.EAI_AGAIN, "temporary failure in name resolution"),
        kafka_errors.KafkaConnectionError("no broker"),
        kafka_errors.KafkaTimeoutError(),
        kafka_errors.NodeNotReadyError(),
        kafka_errors.RequestTimedOutError(),
        kafka_errors.NotLeaderForPartitionError(),
        kafka_errors.UnknownTopicOrPartitionError(),
        kafka_errors.TopicAuthorizationFailedError(),
        OperationalError("server went away"),
        PermissionError(errno.EACCES, "permission denied", "/data/plugin.py"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_dependency_that_failed_for_now_is_transient(error):
    assert is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        ValueError("Exceeds the limit (4300 digits) for integer string conversion"),
        KeyError("pool"),
        RecursionError(),
        TypeError("unsupported operand"),
        EventTooLargeError(announcement(), 1_048_903, 1_048_576),
        FileNotFoundError(errno.ENOENT, "no such file", "/data/plugin.py"),
        OSError(errno.ENAMETOOLONG, "file name too long", "/data/" + "x" * 300),
        OSError(errno.ELOOP, "too many levels of symbolic links", "/data/loop"),
        OSError(errno.EINVAL, "invalid argument", "/data/a\\b"),
        gzip.BadGzipFile("Not a gzipped file (b'ab')"),
        kafka_errors.MessageSizeTooLargeError(),
        kafka_errors.InvalidTopicError(),
        DatabaseError("syntax error"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_any_other_error_is_not_transient(error):
    assert not is_transient(error)


def test_clickhouse_connects_connection_errors_are_transient_and_its_query_errors_not():
    clickhouse = pytest.importorskip(
        "clickhouse_connect.driver.exceptions", reason="the store's driver is not installed"
    )

    assert is_transient(clickhouse.OperationalError("HTTPConnectionPool: Connection refused"))
    assert not is_transient(clickhouse.DatabaseError("Code: 62. Syntax error"))


def test_an_error_raised_from_or_while_handling_a_transient_one_is_transient():
    refused = OperationalError("Connection refused")

    assert is_transient(_raised_from(StoreUnreachableError("no store"), refused))
    assert is_transient(_raised_while_handling(RuntimeError("gave up"), ConnectionError()))
    assert not is_transient(_raised_from(ValueError("bad"), KeyError("k")))


def test_an_error_raised_from_none_while_handling_a_transient_one_is_not_transient():
    error = _raised_from(ValueError("the message names no pool"), ConnectionError("down"))
    error.__cause__ = None
    error.__suppress_context__ = True
    error.__context__ = ConnectionError("down")

    assert not is_transient(error)


def test_the_pause_doubles_from_the_backoff_up_to_its_maximum():
    policy = RetryPolicy(max_attempts=5, backoff_s=0.5, backoff_max_s=30.0)

    pauses = [policy.pause_s(failures) for failures in range(1, 10)]

    assert pauses == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert policy.pause_s(10_000) == 30.0


def test_a_poison_message_is_given_up_on_at_its_last_attempt():
    attempts = Attempts(RetryPolicy(max_attempts=3, backoff_s=1.0))
    key = ("group", "topic", 0)

    verdicts = [attempts.failed(key, 7, ValueError("bad pool")) for _ in range(3)]

    assert [v.give_up for v in verdicts] == [False, False, True]
    assert [v.pause_s for v in verdicts] == [1.0, 2.0, 0.0]
    assert verdicts[-1].reason == "the handler failed 3 times, last with ValueError: bad pool"


def test_a_transient_failure_is_never_given_up_on_and_does_not_count_as_an_attempt():
    attempts = Attempts(RetryPolicy(max_attempts=2, backoff_s=1.0, backoff_max_s=4.0))
    key = ("group", "topic", 0)

    transient = [attempts.failed(key, 7, ConnectionError("down")) for _ in range(50)]
    poison = attempts.failed(key, 7, ValueError("bad"))

    assert not any(verdict.give_up for verdict in transient)
    assert {verdict.attempts for verdict in transient} == {0}
    assert transient[-1].pause_s == 4.0
    assert (poison.attempts, poison.failures, poison.give_up) == (1, 51, False)


def test_the_next_message_or_a_message_that_went_through_starts_afresh():
    attempts = Attempts(RetryPolicy(max_attempts=2))
    key, other = ("group", "topic", 0), ("group", "topic", 1)
    attempts.failed(key, 7, ValueError("bad"))
    attempts.failed(other, 3, ValueError("bad"))

    at_the_next_offset = attempts.failed(key, 8, ValueError("bad"))
    attempts.done(other)
    after_done = attempts.failed(other, 3, ValueError("bad"))

    assert (at_the_next_offset.attempts, after_done.attempts) == (1, 1)


async def test_settle_gives_up_on_poison_and_waits_out_a_transient_failure():
    policy = RetryPolicy(max_attempts=3, backoff_s=0)
    calls: list[str] = []

    async def poison() -> str:
        calls.append("poison")
        raise ValueError("bad")

    async def down_for_a_while() -> str:
        calls.append("transient")
        if calls.count("transient") <= 20:
            raise ConnectionError("down")
        return "done"

    given_up = await settle(poison, policy, logger, "folding one event")
    done = await settle(down_for_a_while, policy, logger, "folding another")

    assert not isinstance(given_up, str)
    assert given_up.reason == "the handler failed 3 times, last with ValueError: bad"
    assert done == "done"
    assert (calls.count("poison"), calls.count("transient")) == (3, 21)


@dataclass
class Flaky:
    """A handler that fails on the events it is told to, with the error it is told to."""

    errors: dict[str, list[BaseException]] = field(default_factory=dict)
    handled: list[str] = field(default_factory=list)
    tries: list[str] = field(default_factory=list)

    async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
        self.tries.append(event.worker_id)
        pending = self.errors.get(event.worker_id, [])
        if pending:
            raise pending.pop(0)
        self.handled.append(event.worker_id)


def _service(topics: TopicNames, flaky: Flaky, **settings: object) -> tuple[Service, list[Event]]:
    defaults = {"retry_backoff_s": 0.0, "handler_max_attempts": 3}
    service = create_service(
        ServiceSettings(topic_prefix=topics.prefix, **(defaults | settings)),
        description="A probe.",
        clock=fixed_clock,
    )
    service.consumer(topics.actuators)(flaky.on_actuator_registered)
    dead_letters: list[Event] = []

    @service.broker.subscriber(topics.dead_letter, decoder=event_of)
    async def collect(event: Event) -> None:
        dead_letters.append(event)

    return service, dead_letters


async def test_a_handler_failing_on_a_message_is_retried_then_dead_lettered_with_the_reason(
    topics,
):
    flaky = Flaky({"bad": [ValueError("no such pool 'x'")] * 3})
    service, dead_letters = _service(topics, flaky)
    poison = encode(announcement("bad"))

    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(2):  # the in-memory broker hands each delivery to the test
            with pytest.raises(ValueError, match="no such pool"):
                await broker.publish(poison, topics.actuators, key=b"k")
        await broker.publish(poison, topics.actuators, key=b"k")
        await broker.publish(encode(announcement("next")), topics.actuators)

    [letter] = dead_letters
    assert isinstance(letter, DeadLettered)
    assert letter.reason == "the handler failed 3 times, last with ValueError: no such pool 'x'"
    assert letter.original() == poison
    assert (letter.source_topic, letter.consumer) == (topics.actuators, "service")
    assert flaky.tries == ["bad", "bad", "bad", "next"]
    assert flaky.handled == ["next"]
    failures = {"exception": "ValueError"}
    assert sample(service, "discospace_handler_failures_total", **failures) == 3
    assert sample(service, "discospace_dead_lettered_total", reason_kind="handler_failed") == 1


async def test_a_handler_awaiting_what_other_code_cancelled_fails_and_is_dead_lettered(topics):
    """Its CancelledError, outside a shutdown, ended FastStream's consume loop (which catches
    Exception only): the consumer kept its partitions and read none of them again."""
    gone = asyncio.get_running_loop().create_future()
    gone.cancel()

    class AwaitsGone(Flaky):
        async def on_actuator_registered(self, event: ActuatorRegistered) -> None:
            self.tries.append(event.worker_id)
            if event.worker_id == "waits":
                await gone
            self.handled.append(event.worker_id)

    flaky = AwaitsGone()
    service, dead_letters = _service(topics, flaky)
    waits = encode(announcement("waits"))

    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(2):
            with pytest.raises(HandlerCancelledError, match="awaited something that was cancelled"):
                await broker.publish(waits, topics.actuators, key=b"k")
        await broker.publish(waits, topics.actuators, key=b"k")
        await broker.publish(encode(announcement("next")), topics.actuators)

    [letter] = dead_letters
    assert isinstance(letter, DeadLettered)
    assert letter.reason.startswith("the handler failed 3 times, last with HandlerCancelledError")
    assert flaky.handled == ["next"]


async def test_a_dependency_down_is_retried_without_bound_and_handled_once_it_is_back(topics):
    flaky = Flaky({"store": [ConnectionError("the store did not answer")] * 20})
    service, dead_letters = _service(topics, flaky)
    message = encode(announcement("store"))

    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(20):
            with pytest.raises(ConnectionError):
                await broker.publish(message, topics.actuators)
        await broker.publish(message, topics.actuators)

    assert dead_letters == []
    assert flaky.handled == ["store"]
    assert len(flaky.tries) == 21
    assert sample(service, "discospace_dead_lettered_total", reason_kind="handler_failed") == 0


async def test_a_transient_error_a_service_raises_is_never_dead_lettered(topics):
    cause = TransientError("the projector's store is restarting")
    flaky = Flaky({"store": [cause] * 10})
    service, dead_letters = _service(topics, flaky, handler_max_attempts=1)

    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(10):
            with pytest.raises(TransientError):
                await broker.publish(encode(announcement("store")), topics.actuators)

    assert dead_letters == []


async def test_a_dead_lettered_message_clears_the_stall_it_caused(topics):
    flaky = Flaky({"bad": [ValueError("bad")] * 5})
    service, dead_letters = _service(topics, flaky, handler_max_attempts=5, stall_failures=2)
    poison = encode(announcement("bad"))

    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(4):
            with pytest.raises(ValueError, match="bad"):
                await broker.publish(poison, topics.actuators)
        stalled = service.stalls.stalls()
        await broker.publish(poison, topics.actuators)

    assert [stall.topic for stall in stalled] == [topics.actuators]
    assert len(dead_letters) == 1
    assert service.stalls.stalls() == []


async def test_the_pause_before_a_message_comes_again_grows(topics, monkeypatch):
    pauses: list[float] = []

    async def no_pause(seconds: float, subscriber: object) -> None:
        pauses.append(seconds)

    monkeypatch.setattr("discospace.runtime.deadletter.pause", no_pause)
    flaky = Flaky({"store": [TimeoutError()] * 4 + [ValueError("bad")] * 2})
    service, dead_letters = _service(
        topics, flaky, retry_backoff_s=0.5, retry_backoff_max_s=3.0, handler_max_attempts=2
    )

    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(5):
            with pytest.raises((TimeoutError, ValueError)):
                await broker.publish(encode(announcement("store")), topics.actuators)
        await broker.publish(encode(announcement("store")), topics.actuators)

    assert pauses == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert len(dead_letters) == 1


def _dead_letter_policy(service: Service) -> DeadLetterPolicy:
    [policy] = [m for m in service.broker.middlewares if isinstance(m, DeadLetterPolicy)]
    return policy


async def test_a_dead_letter_the_topic_refuses_as_too_large_goes_without_its_original(topics):
    """A dead-letter topic taking smaller messages than the service: the letter was refused,
    and the message redelivered, at once and for good."""
    flaky = Flaky({"bad": [ValueError("no such pool 'x'")]})
    service, dead_letters = _service(topics, flaky, handler_max_attempts=1)
    policy = _dead_letter_policy(service)
    publish = policy.publish

    async def small_topic(letter: DeadLettered) -> None:
        if letter.original_base64:
            raise kafka_errors.MessageSizeTooLargeError("the topic's max.message.bytes")
        await publish(letter)

    object.__setattr__(policy, "publish", small_topic)
    poison = encode(announcement("bad"))
    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(poison, topics.actuators)

    [letter] = dead_letters
    assert isinstance(letter, DeadLettered)
    assert (letter.original_base64, letter.original_truncated) == ("", True)
    assert letter.original_size == len(poison)


async def test_a_dead_letter_that_cannot_be_published_is_waited_out_with_the_backoff(
    topics, monkeypatch
):
    """The give-up verdict paused 0 s: redelivered at once, for good, in a busy loop."""
    pauses: list[float] = []

    async def no_pause(seconds: float, subscriber: object) -> None:
        pauses.append(seconds)

    monkeypatch.setattr("discospace.runtime.deadletter.pause", no_pause)
    flaky = Flaky({"bad": [ValueError("no such pool 'x'")] * 10})
    service, _ = _service(topics, flaky, retry_backoff_s=1.0, retry_backoff_max_s=8.0)
    policy = _dead_letter_policy(service)

    async def refused(letter: DeadLettered) -> None:
        raise kafka_errors.InvalidTopicError("the dead-letter topic's name is refused")

    object.__setattr__(policy, "publish", refused)
    async with TestKafkaBroker(service.broker) as broker:
        for _ in range(6):
            with pytest.raises((ValueError, kafka_errors.InvalidTopicError)):
                await broker.publish(encode(announcement("bad")), topics.actuators)

    assert 0.0 not in pauses
    assert pauses[-1] == 8.0


class Subscriber:
    """Stands for a FastStream subscriber: `running` until it is stopped."""

    running = True


async def test_a_pause_before_redelivery_ends_when_the_consumer_stops():
    subscriber = Subscriber()

    async def stop_soon() -> None:
        await asyncio.sleep(0.2)
        subscriber.running = False

    started = time.monotonic()
    await asyncio.gather(pause(30.0, subscriber), stop_soon())

    assert time.monotonic() - started < 1.0


async def test_a_message_folded_already_leaves_nothing_in_a_handler_for_the_stall_watch(topics):
    service = create_service(
        ServiceSettings(topic_prefix=topics.prefix), description="A follower.", clock=fixed_clock
    )
    flaky = Flaky()
    follower = service.follow(topics.actuators)
    follower(flaky.on_actuator_registered)
    follower.start_at({(topics.actuators, 0): 5})  # the in-memory broker's offsets are 0

    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(announcement("folded")), topics.actuators)

    assert flaky.tries == []
    assert service.stalls.deliveries == {}
    assert service.stalls.failing == {}
