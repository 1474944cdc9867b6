"""The secure broker of deploy/local/kafka.sh: SASL_SSL logins, a principal per service, ACLs.

One broker for the module (kafka.sh's default mode, on a free port, its own state dir and topic
prefix), stopped at the end. Services and the CLI run as real processes with the settings kafka.sh
wrote for their principal (`<state>/credentials/<principal>.env`); the refusals are checked with
plain aiokafka clients logged in as each principal.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import (
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    TopicAuthorizationFailedError,
)
from dotenv import dotenv_values

from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.events import (
    ActuatorRegistered,
    Event,
    SpaceRegistered,
    SpaceSubmitted,
    TopicNames,
    decode,
    encode,
    new_event,
)
from discospace.runtime.provisioning import provision_topics
from discospace.runtime.security import KafkaSecurity, connection_problem, kafka_security
from discospace.runtime.settings import KafkaSecuritySettings
from discospace.testing.kafka import free_port
from discospace.testing.loop import ServiceProcess

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "local" / "kafka.sh"
CLI = REPO / ".venv" / "bin" / "discospace"
START_TIMEOUT_S = 900  # a fresh machine fetches the jars first
EXPERIMENT = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune-lora",
    target_properties=("train_tokens_per_second",),
    required_properties=("batch_size",),
)


@dataclass(frozen=True)
class SecureBroker:
    bootstrap: str
    state_dir: Path
    topics: TopicNames

    def env_of(self, principal: str) -> dict[str, str]:
        """The variables kafka.sh wrote for `principal`."""
        values = dotenv_values(self.state_dir / "credentials" / f"{principal}.env")
        return {name: value for name, value in values.items() if value is not None}

    def security_of(
        self, principal: str, password: str | None = None, mechanism: str | None = None
    ) -> KafkaSecurity:
        env = self.env_of(principal)
        settings = KafkaSecuritySettings(
            security_protocol="SASL_SSL",
            sasl_mechanism=mechanism,
            sasl_username=env["KAFKA_SASL_USERNAME"],
            sasl_password_file=None if password else env["KAFKA_SASL_PASSWORD_FILE"],
            sasl_password=password,
            ssl_cafile=env["KAFKA_SSL_CAFILE"],
        )
        return kafka_security(settings)

    def process_env(self, principal: str, **extra: str) -> dict[str, str]:
        """The environment of a process logged in as `principal`, on this module's topics."""
        plain = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}
        return {
            **plain,
            **self.env_of(principal),
            "DISCOSPACE_TOPIC_PREFIX": self.topics.prefix,
            **extra,
        }


def _script(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), command],
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    state_dir = tmp_path_factory.mktemp("secure-kafka")
    port = free_port()
    topics = TopicNames.unique("secure")
    env = {
        **os.environ,
        "KAFKA_PORT": str(port),
        "KAFKA_STATE_DIR": str(state_dir),
        "DISCOSPACE_TOPIC_PREFIX": topics.prefix,
    }
    env.pop("KAFKA_SECURITY", None)  # the default mode: SASL_SSL
    env.pop("KAFKA_CONTROLLER_PORT", None)
    started = _script("start", env)
    assert started.returncode == 0, started.stderr + started.stdout
    try:
        yield SecureBroker(f"127.0.0.1:{port}", state_dir, topics)
    finally:
        stopped = _script("stop", env)
        assert stopped.returncode == 0, stopped.stderr


async def _produce(broker: SecureBroker, security: KafkaSecurity, topic: str, event: Event) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap,
        acks="all",
        enable_idempotence=True,
        request_timeout_ms=15_000,
        **security.client_kwargs(),
    )
    await producer.start()
    try:
        await producer.send_and_wait(topic, encode(event), key=event.key())
    finally:
        await producer.stop()


async def _read(
    broker: SecureBroker,
    security: KafkaSecurity,
    topic: str,
    *,
    group: str | None = None,
    wanted: int = 1,
    timeout_s: float = 30.0,
) -> list[Event]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **security.client_kwargs(),
    )
    events: list[Event] = []
    try:  # a start the broker refuses (the group is not this principal's) closes it too
        await consumer.start()
        async with asyncio.timeout(timeout_s):
            while len(events) < wanted:
                batch = await consumer.getmany(timeout_ms=500)
                events += [decode(r.value) for rs in batch.values() for r in rs if r.value]
    finally:
        await consumer.stop()
    return events


def _catalog() -> ActuatorRegistered:
    return new_event(
        ActuatorRegistered,
        actuator="SFTTrainer",
        pool="a100",
        experiments=(EXPERIMENT,),
        worker_id="secure-1",
    )


def _space_file(path: Path) -> Path:
    path.write_text(
        "sample_store: secure-store\n"
        "entity_space:\n  - {name: batch_size, values: [1, 2, 4]}\n"
        "measurement_space:\n  - {actuator: SFTTrainer, experiment: finetune-lora}\n"
    )
    return path


def _cli(broker: SecureBroker, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *args],
        env=broker.process_env("cli", **extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _service(broker: SecureBroker, name: str, principal: str, tmp: Path, **extra: str):
    port = free_port()
    env = broker.process_env(principal, **{f"DISCOSPACE_{name.upper()}_HTTP_PORT": str(port)})
    return ServiceProcess(name, name, port, {**env, **extra}, tmp / f"{name}.log").start()


async def test_a_service_and_the_cli_with_their_credentials_work_end_to_end(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    """Each with another of the broker's mechanisms: the registry SCRAM-SHA-256, the CLI PLAIN
    (as Confluent Cloud's API keys log in), the actuator's catalog the default SCRAM-SHA-512."""
    topics = secure_broker.topics
    registry = _service(
        secure_broker, "registry", "registry", tmp_path, KAFKA_SASL_MECHANISM="SCRAM-SHA-256"
    )
    try:
        registry.wait_healthy()
        await _produce(
            secure_broker, secure_broker.security_of("actuator"), topics.actuators, _catalog()
        )
        # the catalog and the submission come on two topics, read by two consumers: a loaded
        # machine had the submission answered first ("no actuator has registered yet")
        deadline = asyncio.get_running_loop().time() + 30
        while registry.metric("discospace_catalog_experiments") < 1:
            assert asyncio.get_running_loop().time() < deadline, registry.log_tail()
            await asyncio.sleep(0.1)
        created = await asyncio.to_thread(
            _cli,
            secure_broker,
            "space", "create", "-f", str(_space_file(tmp_path / "s.yaml")),
            KAFKA_SASL_MECHANISM="plain",
        )  # fmt: skip
        spaces = await _read(secure_broker, secure_broker.security_of("cli"), topics.spaces)
    finally:
        exit_status = registry.terminate()

    assert (created.returncode, created.stderr) == (0, ""), registry.log_tail()
    [registered] = spaces
    assert isinstance(registered, SpaceRegistered)
    assert created.stdout.strip() == registered.space_id
    assert exit_status == 0, registry.log_tail()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
async def test_a_wrong_password_is_refused_with_a_sentence_naming_the_login(
    secure_broker: SecureBroker, mechanism: str
) -> None:
    right = secure_broker.security_of("explorer", mechanism=mechanism)
    wrong = secure_broker.security_of("explorer", "not-the-password", mechanism)

    assert await connection_problem(secure_broker.bootstrap, right) is None
    problem = await connection_problem(secure_broker.bootstrap, wrong)
    producer = AIOKafkaProducer(bootstrap_servers=secure_broker.bootstrap, **wrong.client_kwargs())
    with pytest.raises(KafkaConnectionError):
        await producer.start()
    await producer.stop()

    assert problem == (
        f"Kafka at {secure_broker.bootstrap} refused the login of 'explorer' ({mechanism}): "
        "check KAFKA_SASL_USERNAME, its password and KAFKA_SASL_MECHANISM."
    )


def test_a_service_with_a_wrong_password_exits_2_with_one_sentence(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    (tmp_path / "wrong").write_text("not-the-password\n")
    sampler = _service(
        secure_broker,
        "sampler",
        "sampler",
        tmp_path,
        KAFKA_SASL_PASSWORD_FILE=str(tmp_path / "wrong"),
    )
    assert sampler.process is not None
    assert sampler.process.wait(timeout=120) == 2
    output = sampler.log_path.read_text()
    assert "refused the login of 'sampler' (SCRAM-SHA-512)" in output.strip().splitlines()[-1]
    assert output.strip().splitlines()[-1].startswith("discospace sampler cannot start: ")
    assert "Traceback" not in output


def test_the_cli_with_a_wrong_password_says_so_in_one_line(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    (tmp_path / "wrong").write_text("nope")
    result = _cli(
        secure_broker,
        "space", "create", "-f", str(_space_file(tmp_path / "s.yaml")),
        KAFKA_SASL_PASSWORD_FILE=str(tmp_path / "wrong"),
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: Kafka at {secure_broker.bootstrap} refused the login of 'cli' (SCRAM-SHA-512): "
        "check KAFKA_SASL_USERNAME, its password and KAFKA_SASL_MECHANISM.\n"
    )


async def test_a_principal_reads_the_configs_of_its_existing_topics(
    secure_broker: SecureBroker, caplog: pytest.LogCaptureFixture
) -> None:
    """Its ACLs had READ, WRITE and CREATE only: the broker answered DescribeConfigs with
    error 29 and an existing topic that deletes old events was never named at start."""
    topics = secure_broker.topics
    mine = [topics.spaces, topics.dead_letter]  # the registry writes both
    for principal, names in [("registry", mine), ("sampler", [topics.measure("p1")])]:
        security = secure_broker.security_of(principal)
        with caplog.at_level(logging.WARNING, logger="discospace.runtime.provisioning"):
            for _ in range(2):  # the second start finds them made
                await provision_topics(secure_broker.bootstrap, names, topics, security=security)

    assert "could not read the configs" not in caplog.text


async def test_a_principal_writing_a_topic_outside_its_acl_is_refused(
    secure_broker: SecureBroker,
) -> None:
    topics = secure_broker.topics
    event = new_event(SpaceSubmitted, submission_id="s", spec=_spec(), submitted_by="x")
    for principal, topic in [
        ("registry", topics.operations),
        ("cli", topics.measurements),
        ("projector", topics.spaces),
        ("sampler", topics.space_submissions),
    ]:
        with pytest.raises(TopicAuthorizationFailedError):
            await _produce(secure_broker, secure_broker.security_of(principal), topic, event)


async def test_the_actuator_reads_its_pool_and_writes_measurements_and_nothing_else(
    secure_broker: SecureBroker,
) -> None:
    topics = secure_broker.topics
    actuator = secure_broker.security_of("actuator")
    event = new_event(SpaceSubmitted, submission_id="a", spec=_spec(), submitted_by="x")
    pool_group = f"{topics.prefix}.actuator.a100"
    await _produce(
        secure_broker, secure_broker.security_of("sampler"), topics.measure("a100"), event
    )

    read = await _read(secure_broker, actuator, topics.measure("a100"), group=pool_group)
    await _produce(secure_broker, actuator, topics.measurements, event)

    assert [e.event_id for e in read] == [event.event_id]
    with pytest.raises(TopicAuthorizationFailedError):
        await _produce(secure_broker, actuator, topics.operations, event)
    with pytest.raises(TopicAuthorizationFailedError):
        await _produce(secure_broker, actuator, topics.measure("a100"), event)
    for other in (topics.spaces, topics.space_submissions, topics.dead_letter):
        with pytest.raises(TopicAuthorizationFailedError):
            await _read(secure_broker, actuator, other, timeout_s=15)
    with pytest.raises(GroupAuthorizationFailedError):
        await _read(
            secure_broker, actuator, topics.measure("a100"), group=f"{topics.prefix}.explorer"
        )


async def test_a_plaintext_client_cannot_use_the_secure_port(secure_broker: SecureBroker) -> None:
    problem = await connection_problem(secure_broker.bootstrap, KafkaSecurity())
    producer = AIOKafkaProducer(bootstrap_servers=secure_broker.bootstrap)
    with pytest.raises(KafkaConnectionError):
        await producer.start()
    await producer.stop()

    assert problem is not None
    assert "closed a PLAINTEXT connection" in problem


def test_kafka_sh_keeps_credentials_private_and_out_of_its_output(
    secure_broker: SecureBroker,
) -> None:
    credentials = secure_broker.state_dir / "credentials"
    passwords = [path.read_text().strip() for path in credentials.glob("*.password")]
    logs = "".join(path.read_text() for path in (secure_broker.state_dir / "logs").glob("*.log"))

    assert sorted(path.stem for path in credentials.glob("*.env")) == [
        "actuator", "admin", "cli", "explorer", "importer", "projector", "registry", "sampler",
    ]  # fmt: skip
    assert all(oct(path.stat().st_mode & 0o777) == "0o600" for path in credentials.iterdir())
    assert oct((secure_broker.state_dir / "tls" / "ca.key").stat().st_mode & 0o777) == "0o600"
    assert len(set(passwords)) == len(passwords) == 8
    assert not any(password in logs for password in passwords)


def _spec() -> SpaceSpec:
    return SpaceSpec(
        sample_store="secure-store",
        entity_space=(PropertySpec(name="batch_size", values=(1, 2)),),
        measurement_space=(ExperimentRef(actuator="SFTTrainer", experiment="finetune-lora"),),
    )
