"""``discospace space create``: refused before Kafka, Kafka not answering, and end to end
against the registry app on the real broker."""

import asyncio
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from typer.testing import CliRunner

from discospace.cli.errors import KafkaUnavailableError
from discospace.cli.main import app
from discospace.cli.requests import answer_to
from discospace.core import ExperimentSpec, load_discovery_space, load_space_spec
from discospace.events import (
    ActuatorRegistered,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
    TopicNames,
    encode,
    new_event,
)
from discospace.registry.app import create_app
from discospace.registry.settings import RegistrySettings
from discospace.testing.kafka import free_port

REPO_ROOT = Path(__file__).resolve().parents[3]
SEED_SPACE = REPO_ROOT / "tests" / "data" / "seed-space.yaml"

runner = CliRunner()


def create(*args: str, kafka: str = "127.0.0.1:9", prefix: str = "discospace"):
    return runner.invoke(
        app, ["--kafka", kafka, "--topic-prefix", prefix, "space", "create", *args]
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (
            "sample_store: s\nentity_space: [{name: a, values: [1, 2]}, {name: a, values: [3]}]\n"
            "measurement_space: []",
            "'a'",
        ),
        (
            "sample_store: s\nentity_space: [{name: a, range: [5, 1]}]\nmeasurement_space: []",
            "property 'a'",
        ),
        ("sample_store: s\nentity_space: []\n", "measurement_space: is required"),
        (
            "sample_store: s\nentity_space: [{name: a, values: [1, 2]}]\nmeasurement_space: []",
            "the measurement space has no experiment",
        ),
    ],
)
def test_a_space_file_that_is_not_well_formed_is_refused_before_anything_is_published(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "space.yaml"
    if content is not None:
        path.write_text(content)
    result = create("-f", str(path))
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}")
    assert message in line


def test_kafka_not_answering_is_one_line_that_says_how_to_start_it() -> None:
    broker = f"127.0.0.1:{free_port()}"
    result = create("-f", str(SEED_SPACE), kafka=broker)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: Kafka at {broker} is not answering: start it with `make up` "
        "or set KAFKA_BOOTSTRAP_SERVERS"
    )
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("broker", "shown"),
    [
        ("host:abc", "host:abc"),
        (":::", ":::"),
        ("", ""),
        ("127.0.0.1:9092,host", "127.0.0.1:9092,host"),
        ("user:s3cretpw@127.0.0.1:9092", "user:***@127.0.0.1:9092"),
        ("https://user:s3cretpw@broker", "https://user:***@broker"),
        ("localhost:9092,SASL_SSL://u:s3cretpw@b:9093", "localhost:***@b:9093"),
        ("admin:s3cretpw,more@b:9092", "admin:***@b:9092"),  # a password holding a comma
    ],
)
def test_a_malformed_kafka_address_is_one_line_saying_so(broker: str, shown: str) -> None:
    """A URL or user info is no Kafka address, and the message never shows a password."""
    result = create("-f", str(SEED_SPACE), kafka=broker)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: the Kafka address {shown!r} (--kafka or KAFKA_BOOTSTRAP_SERVERS) is not a "
        "comma-separated list of host:port (no scheme, no user name or password: those go in "
        "KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_USERNAME, ...)"
    )
    assert "s3cretpw" not in result.output


@pytest.mark.integration
def test_no_registry_on_the_topics_ends_with_a_sentence_naming_the_registry(
    kafka_bootstrap: str,
) -> None:
    result = create(
        "-f", str(SEED_SPACE), "--timeout", "1",
        kafka=kafka_bootstrap, prefix=TopicNames.unique("cli-noregistry").prefix,
    )  # fmt: skip
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: the registry did not answer within 1s: is it running")
    assert "python -m discospace.registry" in line


async def _discospace(*args: str) -> tuple[int, str, str]:
    """The installed console command, as a user runs it."""
    process = await asyncio.create_subprocess_exec(
        str(REPO_ROOT / ".venv" / "bin" / "discospace"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    return process.returncode or 0, out.decode(), err.decode()


async def _announce(bootstrap: str, topics: TopicNames, catalog: ActuatorRegistered) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(topics.actuators, encode(catalog), key=catalog.key())
    finally:
        await producer.stop()


SEED_CATALOG = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0",
    target_properties=("train_tokens_per_second", "gpu_memory_utilization_peak"),
    required_properties=("model_name", "batch_size", "number_gpus", "model_max_length"),
)


@pytest.mark.integration
async def test_space_create_prints_the_id_the_registry_registered_and_the_same_id_again(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    topics = TopicNames.unique("cli-space")
    connection = ("--kafka", kafka_bootstrap, "--topic-prefix", topics.prefix)
    registry = create_app(
        RegistrySettings(kafka_bootstrap_servers=kafka_bootstrap, topic_prefix=topics.prefix)
    )
    async with registry.app.start_lifespan_context():
        await _announce(kafka_bootstrap, topics, new_event(
            ActuatorRegistered, actuator="SFTTrainer", pool="a100",
            experiments=(SEED_CATALOG,), worker_id="a100-0",
        ))  # fmt: skip
        deadline = time.monotonic() + 20
        while len(registry.state) < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

        first = await _discospace(*connection, "space", "create", "-f", str(SEED_SPACE))
        again = await _discospace(*connection, "space", "create", "-f", str(SEED_SPACE))

        unknown = tmp_path / "unknown.yaml"
        unknown.write_text(
            SEED_SPACE.read_text().replace("finetune-lora-fsdp", "finetune-qlora-fsdp")
        )
        rejected = await _discospace(*connection, "space", "create", "-f", str(unknown))

    expected_id = load_discovery_space(SEED_SPACE).id
    assert first == (0, expected_id + "\n", "")
    assert again == first
    code, out, err = rejected
    assert (code, out) == (2, "")
    assert err == (
        f"error: the registry rejected {unknown}: experiment "
        "'finetune-qlora-fsdp-r-4-a-16-tm-default-v1.2.0' of actuator 'SFTTrainer' is not in "
        "the catalog (actuator 'SFTTrainer' offers: "
        "finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0)\n"
    )


def _answers(space_id: str = "space-aaaaaaaaaaaa"):
    spec = load_space_spec(SEED_SPACE)
    submission = new_event(SpaceSubmitted, submission_id="sub-mine", spec=spec, submitted_by="me")
    return submission, answer_to(submission, space_id)


def _registered(space_id: str, submission_id: str) -> SpaceRegistered:
    spec = load_space_spec(SEED_SPACE)
    return new_event(
        SpaceRegistered,
        submission_id=submission_id,
        space_id=space_id,
        spec=spec,
        experiments=(SEED_CATALOG,),
    )


def test_the_registration_of_the_same_space_answers_whoever_submitted_it_first() -> None:
    _, match = _answers()
    earlier = _registered("space-aaaaaaaaaaaa", "sub-someone-else")
    assert match(earlier) is earlier


def test_registrations_and_rejections_of_other_submissions_are_not_the_answer() -> None:
    _, match = _answers()
    other_space = _registered("space-bbbbbbbbbbbb", "sub-other")
    other_rejection = new_event(SpaceRejected, submission_id="sub-other", reason="no")
    mine = new_event(SpaceRejected, submission_id="sub-mine", reason="no")
    assert match(other_space) is None
    assert match(other_rejection) is None
    assert match(mine) is mine


def test_topics_are_asked_for_with_the_cli_request_timeout_not_aiokafkas_40_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broker address that takes connections and never answers was reported after 50 s:
    the admin client waited aiokafka's 40 s per request, where the CLI's clients wait 10."""
    import discospace.runtime.provisioning as provisioning
    from discospace.cli.kafka import REQUEST_TIMEOUT_MS, ensure_topics

    built: list[dict[str, object]] = []

    class Admin:
        def __init__(self, **options: object) -> None:
            built.append(options)

        async def start(self) -> None:
            raise provisioning.KafkaConnectionError("no answer")

        async def close(self) -> None:
            return None

    async def no_login_problem(*_: object) -> None:
        return None

    monkeypatch.setattr(provisioning, "AIOKafkaAdminClient", Admin)
    monkeypatch.setattr(provisioning, "login_error", no_login_problem)
    with pytest.raises(KafkaUnavailableError):
        asyncio.run(ensure_topics("127.0.0.1:9", TopicNames(), ["discospace.spaces"]))
    assert [options["request_timeout_ms"] for options in built] == [REQUEST_TIMEOUT_MS]
