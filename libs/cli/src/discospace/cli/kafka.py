"""Kafka from the CLI: make sure topics exist, publish one event, wait for the answer to it.

The answer is read from the end offsets captured *before* the request is published, so it
cannot be missed however fast the service answers, and nothing older is mistaken for it.

Every client logs in as the services do, from the same variables (`KAFKA_SECURITY_PROTOCOL`,
`KAFKA_SASL_USERNAME`, `KAFKA_SASL_PASSWORD[_FILE]`, `KAFKA_SSL_CAFILE`: see
`discospace.runtime.security`); a login the broker refuses is one sentence, as is a topic the
principal may not write or read.
"""

import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaConnectionError, KafkaError

from discospace.cli.errors import CliError, KafkaUnavailableError
from discospace.events import Event, EventDecodeError, decode, encode
from discospace.events.topics import TopicNames
from discospace.runtime.provisioning import TopicsRefusedError, provision_topics
from discospace.runtime.security import KafkaLoginError, client_kwargs, login_error

E = TypeVar("E", bound=Event)
REQUEST_TIMEOUT_MS = 10_000


class _Startable(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=_Startable)


@asynccontextmanager
async def _started(client: S, bootstrap_servers: str) -> AsyncIterator[S]:
    try:
        await client.start()
    except KafkaConnectionError:
        await client.stop()
        await refuse_login(bootstrap_servers)
        raise KafkaUnavailableError(bootstrap_servers) from None
    try:
        yield client
    finally:
        await client.stop()


async def ensure_topics(bootstrap_servers: str, topics: TopicNames, names: Iterable[str]) -> None:
    """Create the topics among ``names`` that are missing (compacted where the layout says),
    so that publishing to a topic no service created yet does not create it wrong."""
    try:
        await provision_topics(
            bootstrap_servers, names, topics, request_timeout_ms=REQUEST_TIMEOUT_MS
        )
    except KafkaLoginError as error:
        raise CliError(error.sentence) from None
    except TopicsRefusedError as error:
        raise CliError(str(error)) from None
    except KafkaConnectionError:
        raise KafkaUnavailableError(bootstrap_servers) from None
    except KafkaError as error:
        raise CliError(f"Kafka at {bootstrap_servers} refused to create topics: {error}") from None


async def refuse_login(bootstrap_servers: str) -> None:
    """Raise `CliError` with the sentence when security is why Kafka could not be reached."""
    try:
        await login_error(bootstrap_servers)
    except KafkaLoginError as error:
        raise CliError(error.sentence) from None


def _producer(bootstrap_servers: str) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers,
        acks="all",
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        client_id="discospace-cli",
        **client_kwargs(),
    )


async def _send(producer: AIOKafkaProducer, topic: str, event: Event) -> None:
    try:
        await producer.send_and_wait(topic, encode(event), key=event.key())
    except KafkaError as error:
        raise CliError(f"Kafka did not take the event on {topic}: {error}") from None


async def publish(bootstrap_servers: str, topic: str, event: Event) -> None:
    """Publish ``event`` under its key and wait until the broker has it."""
    async with _started(_producer(bootstrap_servers), bootstrap_servers) as producer:
        await _send(producer, topic, event)


class AnswerReader:
    """Publishes a request, then reads one topic from the end offsets it had before."""

    def __init__(self, producer: AIOKafkaProducer, consumer: AIOKafkaConsumer) -> None:
        self._producer = producer
        self._consumer = consumer

    @classmethod
    @asynccontextmanager
    async def opened(cls, bootstrap_servers: str, topic: str) -> AsyncIterator["AnswerReader"]:
        """A reader positioned at the current end of ``topic`` (which must exist)."""
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            client_id="discospace-cli",
            **client_kwargs(),
        )
        async with (
            _started(_producer(bootstrap_servers), bootstrap_servers) as producer,
            _started(consumer, bootstrap_servers),
        ):
            await _seek_to_end(producer, consumer, topic)
            yield cls(producer, consumer)

    async def publish(self, topic: str, event: Event) -> None:
        """Publish the request whose answer :meth:`first` waits for."""
        await _send(self._producer, topic, event)

    async def first(self, wanted: Callable[[Event], E | None], timeout_s: float) -> E | None:
        """The first event after the opening offsets that ``wanted`` maps to an answer, or
        None after ``timeout_s``; messages that are not events are passed over."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            batches = await self._consumer.getmany(timeout_ms=max(1, int(min(left, 1) * 1000)))
            for record in (r for records in batches.values() for r in records):
                answer = _answer(record.value, wanted)
                if answer is not None:
                    return answer
        return None


async def _seek_to_end(producer: AIOKafkaProducer, consumer: AIOKafkaConsumer, topic: str) -> None:
    try:
        ids = await producer.partitions_for(topic)
        partitions = [TopicPartition(topic, p) for p in sorted(ids)]
        consumer.assign(partitions)
        for partition, offset in (await consumer.end_offsets(partitions)).items():
            consumer.seek(partition, offset)
    except KafkaError as error:
        raise CliError(f"Kafka could not tell where {topic} ends: {error}") from None


def _answer(value: bytes | None, wanted: Callable[[Event], E | None]) -> E | None:
    if value is None:
        return None
    try:
        return wanted(decode(value))
    except EventDecodeError:
        return None
