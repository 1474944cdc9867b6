"""``discospace operation create|cancel``: operation files become events on the real broker."""

import asyncio
import json
import time
import uuid
from pathlib import Path

import jsonschema
import pytest
from aiokafka import AIOKafkaConsumer
from typer.testing import CliRunner

from discospace.cli.kafka import ensure_topics, publish
from discospace.cli.main import app
from discospace.events import (
    OperationCancelRequested,
    OperationRequested,
    TopicNames,
    decode,
    new_event,
)
from discospace.testing.kafka import free_port

from .conftest import registration

REPO_ROOT = Path(__file__).resolve().parents[3]
RANDOM_WALK = REPO_ROOT / "examples" / "random-walk.yaml"

runner = CliRunner()


def cli(*args: str, kafka: str = "127.0.0.1:9", prefix: str = "discospace"):
    return runner.invoke(app, ["--kafka", kafka, "--topic-prefix", prefix, *args])


async def _read(bootstrap: str, topic: str, count: int, timeout_s: float) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"test-reader-{uuid.uuid4().hex}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        await consumer.start()
        values: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while len(values) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            values += [r.value for records in batches.values() for r in records]
        return values
    finally:
        await consumer.stop()


def read_topic(bootstrap: str, topic: str, count: int, timeout_s: float = 15.0) -> list[bytes]:
    """What a plain consumer finds on ``topic`` from its beginning (up to ``count`` values)."""
    return asyncio.run(_read(bootstrap, topic, count, timeout_s))


def _register(bootstrap: str, topics: TopicNames) -> str:
    """A space registered on the spaces topic (``operation create`` checks it is); its id."""
    space = registration()

    async def put() -> None:
        await ensure_topics(bootstrap, topics, [topics.spaces])
        await publish(bootstrap, topics.spaces, space)

    asyncio.run(put())
    return space.space_id


def _request(bootstrap: str, topics: TopicNames, operation_id: str) -> None:
    """An operation requested on the operations topic, as `operation create` publishes it."""
    requested = new_event(
        OperationRequested,
        operation_id=operation_id,
        space_id="space-0123456789ab",
        operator="random_walk",
        requested_by="me",
    )

    async def put() -> None:
        await ensure_topics(bootstrap, topics, [topics.operations])
        await publish(bootstrap, topics.operations, requested)

    asyncio.run(put())


def _operation_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "op.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("operator: random_walk\n", "the operation names no space"),
        ("space_id: s\noperator: random_walk\nparameters: {batchsize: 4}\n", "batchsize"),
        ("space_id: s\nparameters: {}\n", "operator: is required"),
        ("space_id: s\noperator: w\nparameters: {sampler: grouped}\n", "needs group_by"),
        ("a: [", "line"),
    ],
)
def test_a_bad_operation_file_gives_one_line_before_anything_is_published(
    tmp_path: Path, text: str, message: str
) -> None:
    result = cli("operation", "create", "-f", str(_operation_file(tmp_path, text)))
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert message in line
    assert "Traceback" not in result.output


def test_a_missing_operation_file_is_named(tmp_path: Path) -> None:
    result = cli("operation", "create", "-f", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {tmp_path / 'nope.yaml'}: no such file"


def test_kafka_not_answering_is_one_line_that_says_how_to_start_it(tmp_path: Path) -> None:
    broker = f"127.0.0.1:{free_port()}"
    result = cli("operation", "create", "-f", str(RANDOM_WALK), "--space", "s", kafka=broker)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: Kafka at {broker} is not answering: start it with `make up` "
        "or set KAFKA_BOOTSTRAP_SERVERS"
    )


@pytest.mark.parametrize("space", ["", "  "])
def test_an_empty_space_option_is_refused_not_read_as_the_files(tmp_path: Path, space: str) -> None:
    """`--space "$space"` with $space empty (a `space create` that failed) ran the operation on
    whatever space the file named."""
    text = RANDOM_WALK.read_text() + "space_id: space-aaaaaaaaaaaa\n"
    result = cli(
        "operation", "create", "-f", str(_operation_file(tmp_path, text)), "--space", space
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: --space is empty: give the id of a space (space-...), or leave it out"
    )


def test_a_topic_prefix_kafka_cannot_use_is_refused() -> None:
    result = cli("operation", "cancel", "op-1", prefix="bad prefix!")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: Topic prefix 'bad prefix!' must be")


@pytest.mark.integration
def test_operation_create_publishes_a_request_valid_against_the_published_schema(
    kafka_bootstrap: str,
) -> None:
    topics = TopicNames.unique("cli-op")
    space_id = _register(kafka_bootstrap, topics)
    result = cli(
        "operation", "create", "-f", str(RANDOM_WALK), "--space", space_id,
        kafka=kafka_bootstrap, prefix=topics.prefix,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    operation_id = result.stdout.strip()
    assert operation_id.startswith("op-")

    [raw] = read_topic(kafka_bootstrap, topics.operations, 1)
    schema = json.loads((REPO_ROOT / "proto/events/OperationRequested.v1.json").read_text())
    jsonschema.validate(json.loads(raw), schema)
    event = decode(raw)
    assert isinstance(event, OperationRequested)
    assert (event.operation_id, event.space_id) == (operation_id, space_id)
    assert event.operator == "random_walk"
    assert event.parameters.number_entities == "all"
    assert event.parameters.batch_size == 4


@pytest.mark.integration
def test_the_space_in_the_file_is_used_when_no_space_option_is_given(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    topics = TopicNames.unique("cli-op")
    space_id = _register(kafka_bootstrap, topics)
    file = _operation_file(
        tmp_path,
        f"space_id: {space_id}\noperator: random_walk\n"
        "parameters: {number_entities: 5, seed: 3}\n",
    )
    result = cli(
        "operation", "create", "-f", str(file), kafka=kafka_bootstrap, prefix=topics.prefix
    )
    assert result.exit_code == 0, result.output

    [raw] = read_topic(kafka_bootstrap, topics.operations, 1)
    event = decode(raw)
    assert isinstance(event, OperationRequested)
    assert (event.space_id, event.parameters.number_entities, event.parameters.seed) == (
        space_id,
        5,
        3,
    )


@pytest.mark.integration
def test_an_unregistered_space_is_refused_at_once_and_nothing_is_published(
    kafka_bootstrap: str,
) -> None:
    topics = TopicNames.unique("cli-op")
    _register(kafka_bootstrap, topics)
    started = time.monotonic()
    result = cli(
        "operation", "create", "-f", str(RANDOM_WALK), "--space", "space-000000000000",
        kafka=kafka_bootstrap, prefix=topics.prefix,
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith("error: space space-000000000000 is not registered")
    assert time.monotonic() - started < 30
    assert read_topic(kafka_bootstrap, topics.operations, 1, timeout_s=2) == []


@pytest.mark.integration
@pytest.mark.parametrize("operation_id", ["op-42", "op-café"])
def test_operation_cancel_publishes_a_cancel_request_keyed_by_the_operation(
    kafka_bootstrap: str, operation_id: str
) -> None:
    """An id with a character beyond ASCII was looked for in the log escaped (`\\u00e9`),
    where events are written in UTF-8 as they are: "not known"."""
    topics = TopicNames.unique("cli-op")
    _request(kafka_bootstrap, topics, operation_id)
    result = cli(
        "operation", "cancel", operation_id, "--reason", "wrong store",
        kafka=kafka_bootstrap, prefix=topics.prefix,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"cancel requested for {operation_id}"

    [_, raw] = read_topic(kafka_bootstrap, topics.operations, 2)
    event = decode(raw)
    assert isinstance(event, OperationCancelRequested)
    assert (event.operation_id, event.reason) == (operation_id, "wrong store")
    assert event.key() == operation_id.encode()


@pytest.mark.parametrize("operation_id", ["", "o" * 10_000])
def test_cancelling_an_id_no_operation_could_have_is_refused_unread(operation_id: str) -> None:
    result = cli("operation", "cancel", operation_id)  # Kafka at 127.0.0.1:9 answers nothing
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: operation '{operation_id[:40]}")
    assert "is not known" in line


@pytest.mark.integration
def test_cancelling_an_operation_the_log_does_not_know_is_refused_publishing_nothing(
    kafka_bootstrap: str,
) -> None:
    topics = TopicNames.unique("cli-op")
    _request(kafka_bootstrap, topics, "op-0123456789ab")
    space_id = _register(kafka_bootstrap, topics)
    for unknown in ("op-000000000000", space_id, "op-ünïcødé", "o" * 10_000):
        result = cli("operation", "cancel", unknown, kafka=kafka_bootstrap, prefix=topics.prefix)
        assert result.exit_code == 2, result.output
        [line] = result.stderr.strip().splitlines()
        assert line == (
            f"error: operation '{unknown if len(unknown) <= 40 else unknown[:40] + '...'}' is "
            "not known: list the operations with `discospace operation list`"
        )
    assert len(read_topic(kafka_bootstrap, topics.operations, 2, timeout_s=3)) == 1
