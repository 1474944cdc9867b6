"""pytest plugin: a real Kafka broker for integration tests, and fresh topics on it.

`kafka_bootstrap` (session) finds a broker, first that works wins:

1. `KAFKA_BOOTSTRAP_SERVERS`, when set: an existing broker or cluster, used as is;
2. `deploy/local/kafka.sh` on a free port with a temporary state dir (so it never meets the
   broker of `make up`), stopped at the end of the session; plaintext, asked for explicitly
   (`KAFKA_SECURITY=plaintext`: the script's default is SASL_SSL with ACLs);
3. a testcontainers Kafka, where a Docker engine answers.

When none works the requesting test fails with every reason: integration tests are never skipped.

`fresh_topic(prefix)` and `topic_name` give unique topic names and need no broker, so in-memory
tests can use them too; `new_topic(prefix, partitions=...)` creates a topic on the broker and
deletes it after the test.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from discospace.runtime.security import client_kwargs

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
SCRIPT = Path("deploy/local/kafka.sh")
CONTAINER_IMAGE = "confluentinc/cp-kafka:7.9.0"
SCRIPT_START_TIMEOUT_S = 900  # a fresh machine downloads the jars first
SCRIPT_STOP_TIMEOUT_S = 60
_TOPIC_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")
_NO_ERROR = 0
_UNKNOWN_TOPIC = 3


class BrokerUnavailableError(Exception):
    """One way of getting a broker did not work; the message says why in one sentence."""


@dataclass(frozen=True)
class KafkaBroker:
    """A broker the tests can reach, where it came from, and how to let it go."""

    bootstrap_servers: str
    origin: str
    stop: Callable[[], None]


BrokerSource = Callable[[], KafkaBroker]


def find_broker(sources: Sequence[BrokerSource]) -> KafkaBroker:
    """Try each source in order; raise with every reason when none gives a broker."""
    reasons = []
    for source in sources:
        try:
            return source()
        except BrokerUnavailableError as error:
            reasons.append(str(error))
    raise BrokerUnavailableError("; ".join(reasons))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _nothing_to_stop() -> None:
    """Brokers we did not start are not ours to stop."""


def broker_from_env(value: str | None) -> KafkaBroker:
    """The broker named by KAFKA_BOOTSTRAP_SERVERS, checked to accept connections."""
    if not value or not value.strip():
        raise BrokerUnavailableError(f"{BOOTSTRAP_ENV} is not set")
    servers = value.strip()
    if not any(_accepts_connections(server) for server in servers.split(",")):
        raise BrokerUnavailableError(f"{BOOTSTRAP_ENV}={servers} does not accept connections")
    return KafkaBroker(servers, f"{BOOTSTRAP_ENV}={servers}", _nothing_to_stop)


def _accepts_connections(server: str, timeout_s: float = 3.0) -> bool:
    host, _, port = server.strip().rpartition(":")
    try:
        with closing(socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)):
            return True
    except (OSError, ValueError):
        return False


def find_script(roots: Sequence[Path]) -> Path:
    """deploy/local/kafka.sh under the first root that has it."""
    for root in roots:
        if (root / SCRIPT).is_file():
            return root / SCRIPT
    raise BrokerUnavailableError(f"{SCRIPT} was not found under {', '.join(map(str, roots))}")


def start_local_broker(script: Path, state_dir: Path) -> KafkaBroker:
    """Start the broker of deploy/local/kafka.sh on a free port, with its own state dir."""
    port = free_port()
    env = {
        **os.environ,
        "KAFKA_PORT": str(port),
        "KAFKA_STATE_DIR": str(state_dir),
        "KAFKA_SECURITY": "plaintext",
    }
    env.pop("KAFKA_CONTROLLER_PORT", None)
    result = _run_script(script, "start", env, SCRIPT_START_TIMEOUT_S)
    if result.returncode != 0:
        reason = _last_lines(result.stderr or result.stdout).removeprefix("kafka.sh: ")
        raise BrokerUnavailableError(f"{script} start failed: {reason}")
    return KafkaBroker(
        f"127.0.0.1:{port}",
        f"{script} (state {state_dir})",
        lambda: _stop_local_broker(script, env),
    )


def _stop_local_broker(script: Path, env: dict[str, str]) -> None:
    result = _run_script(script, "stop", env, SCRIPT_STOP_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"{script} stop failed: {_last_lines(result.stderr)}")


def _run_script(
    script: Path, command: str, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["bash", str(script), command],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise BrokerUnavailableError(f"{script} {command} took over {timeout_s}s") from error
    except OSError as error:
        raise BrokerUnavailableError(f"{script} could not be run ({error})") from error


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:]) or "no output"


def start_container_broker(image: str = CONTAINER_IMAGE) -> KafkaBroker:
    """A Kafka container through testcontainers, where a Docker engine answers."""
    try:
        import docker
        from testcontainers.community.kafka import KafkaContainer
    except ImportError as error:
        raise BrokerUnavailableError(f"testcontainers is not installed ({error})") from error
    try:
        docker.from_env().ping()
    except Exception as error:  # docker raises several unrelated types when no engine runs
        raise BrokerUnavailableError("no Docker engine answers for testcontainers") from error
    container = KafkaContainer(image).with_kraft()
    container.start(timeout=180)
    return KafkaBroker(container.get_bootstrap_server(), f"container {image}", container.stop)


def _broker_sources(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> list[BrokerSource]:
    roots = [request.config.rootpath, Path(__file__).resolve().parents[5]]

    def local_script() -> KafkaBroker:
        script = find_script(roots)
        return start_local_broker(script, tmp_path_factory.mktemp("kafka"))

    return [
        lambda: broker_from_env(os.environ.get(BOOTSTRAP_ENV)),
        local_script,
        start_container_broker,
    ]


@pytest.fixture(scope="session")
def kafka_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaBroker]:
    """The session's broker (see the module docstring for where it comes from)."""
    explicit = os.environ.get(BOOTSTRAP_ENV, "").strip()
    sources = _broker_sources(request, tmp_path_factory)
    try:
        broker = find_broker(sources[:1] if explicit else sources)
    except BrokerUnavailableError as error:
        reasons = str(error)
    else:
        yield broker
        broker.stop()
        return
    pytest.fail(
        f"No Kafka broker for integration tests ({reasons}). Set {BOOTSTRAP_ENV}, install "
        "Java >= 17 and Maven for deploy/local/kafka.sh, or run a Docker engine.",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: KafkaBroker) -> str:
    """host:port[,host:port...] of a real Kafka broker for this test session."""
    return kafka_broker.bootstrap_servers


def unique_topic_name(prefix: str = "test", hint: str = "") -> str:
    """A topic name no other test (nor other engineer on a shared broker) uses."""
    parts = [prefix, hint[:40], uuid.uuid4().hex[:12]]
    return ".".join(_TOPIC_UNSAFE.sub("-", part).strip("-") for part in parts if part)


@pytest.fixture
def fresh_topic(request: pytest.FixtureRequest) -> Callable[..., str]:
    """Factory of unique topic names, tagged with the test's name; needs no broker."""

    def make(prefix: str = "test") -> str:
        return unique_topic_name(prefix, request.node.name)

    return make


@pytest.fixture
def topic_name(fresh_topic: Callable[..., str]) -> str:
    """One unique topic name for this test."""
    return fresh_topic("test")


async def create_topics(
    bootstrap_servers: str, partitions_by_topic: dict[str, int], replication_factor: int = 1
) -> None:
    """Create topics with the given partition counts; an existing topic is an error."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, **client_kwargs())
    await admin.start()
    try:
        new = [
            NewTopic(name, count, replication_factor) for name, count in partitions_by_topic.items()
        ]
        response = await admin.create_topics(new)
        _raise_for_topic_errors(response, {_NO_ERROR})
        await _wait_for_leaders(admin, list(partitions_by_topic))
    finally:
        await admin.close()


async def _wait_for_leaders(
    admin: AIOKafkaAdminClient, names: list[str], timeout_s: float = 15.0
) -> None:
    """CreateTopics returns once the controller decided; wait until every partition can be used."""
    deadline = time.monotonic() + timeout_s
    while not _all_led(await admin.describe_topics(names), len(names)):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"topics {names} have partitions without a leader after {timeout_s}s"
            )
        await asyncio.sleep(0.05)


def _all_led(topics: list[dict[str, object]], expected: int) -> bool:
    ready = [
        topic
        for topic in topics
        if topic["error_code"] == _NO_ERROR and all(p["leader"] >= 0 for p in topic["partitions"])  # type: ignore[attr-defined]
    ]
    return len(ready) == expected


async def delete_topics(bootstrap_servers: str, names: Sequence[str]) -> None:
    """Delete topics; one that is already gone is fine."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, **client_kwargs())
    await admin.start()
    try:
        response = await admin.delete_topics(list(names))
        _raise_for_topic_errors(response, {_NO_ERROR, _UNKNOWN_TOPIC})
    finally:
        await admin.close()


def _raise_for_topic_errors(response: object, accepted: set[int]) -> None:
    results = getattr(response, "topic_errors", None) or getattr(response, "topic_error_codes", [])
    failed = [(item[0], item[1]) for item in results if item[1] not in accepted]
    if failed:
        raise RuntimeError(f"Kafka refused topic changes (topic, error code): {failed}")


NewTopicFactory = Callable[..., Awaitable[str]]


@pytest.fixture
async def new_topic(
    kafka_bootstrap: str, fresh_topic: Callable[..., str]
) -> AsyncIterator[NewTopicFactory]:
    """Factory that creates a fresh topic on the broker (`await new_topic("dlq", partitions=1)`)
    and deletes every topic it created when the test ends."""
    created: list[str] = []

    async def make(prefix: str = "test", partitions: int = 3) -> str:
        name = fresh_topic(prefix)
        await create_topics(kafka_bootstrap, {name: partitions})
        created.append(name)
        return name

    yield make
    if created:
        await delete_topics(kafka_bootstrap, created)
