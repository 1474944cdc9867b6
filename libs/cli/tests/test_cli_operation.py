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

from discospace.cli.main import app
from discospace.events import OperationCancelRequested, OperationRequested, TopicNames, decode
from discospace.testing.kafka import free_port

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
    await consumer.start()
    try:
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


def test_a_topic_prefix_kafka_cannot_use_is_refused() -> None:
    result = cli("operation", "cancel", "op-1", prefix="bad prefix!")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: Topic prefix 'bad prefix!' must be")


@pytest.mark.integration
def test_operation_create_publishes_a_request_valid_against_the_published_schema(
    kafka_bootstrap: str,
) -> None:
    topics = TopicNames.unique("cli-op")
    result = cli(
        "operation", "create", "-f", str(RANDOM_WALK), "--space", "space-0123456789ab",
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
    assert (event.operation_id, event.space_id) == (operation_id, "space-0123456789ab")
    assert event.operator == "random_walk"
    assert event.parameters.number_entities == "all"
    assert event.parameters.batch_size == 4


@pytest.mark.integration
def test_the_space_in_the_file_is_used_when_no_space_option_is_given(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    topics = TopicNames.unique("cli-op")
    file = _operation_file(
        tmp_path,
        "space_id: space-aaaaaaaaaaaa\noperator: random_walk\n"
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
        "space-aaaaaaaaaaaa",
        5,
        3,
    )


@pytest.mark.integration
def test_operation_cancel_publishes_a_cancel_request_keyed_by_the_operation(
    kafka_bootstrap: str,
) -> None:
    topics = TopicNames.unique("cli-op")
    result = cli(
        "operation", "cancel", "op-42", "--reason", "wrong store",
        kafka=kafka_bootstrap, prefix=topics.prefix,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "cancel requested for op-42"

    [raw] = read_topic(kafka_bootstrap, topics.operations, 1)
    event = decode(raw)
    assert isinstance(event, OperationCancelRequested)
    assert (event.operation_id, event.reason, event.key()) == ("op-42", "wrong store", b"op-42")
