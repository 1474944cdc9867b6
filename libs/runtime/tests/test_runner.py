"""A service whose broker fails to start after its app reported "startup complete" exits 2.

FastStream's ASGI app reports startup complete before it connects its broker; a connection
that then fails was reported only as a failed shutdown, and uvicorn went on serving HTTP with no
consumer (the chaos suite found a projector in that state for 8 minutes after a broker stop).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from discospace.runtime import ServiceSettings, create_service, runner
from discospace.runtime.runner import BrokerStartWatch, last_line
from discospace.testing.kafka import free_port

TRACEBACK = (
    "Traceback (most recent call last):\n  File x, line 1\n"
    "aiokafka.errors.KafkaConnectionError: Unable to bootstrap from [('127.0.0.1', 1)]\n"
)


class FakeServer:
    should_exit = False


def lifespan_app(messages: list[str]):  # type: ignore[no-untyped-def]
    """An ASGI app that answers the lifespan with `messages`, like FastStream's."""

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        await receive()
        for kind in messages:
            if kind == "wait-shutdown":
                await receive()
            else:
                await send({"type": kind, "message": TRACEBACK})

    return app


async def drive(watch: BrokerStartWatch, incoming: list[str]) -> list[str]:
    sent: list[str] = []
    queue = [{"type": kind} for kind in incoming]

    async def receive():  # type: ignore[no-untyped-def]
        return queue.pop(0)

    async def send(message):  # type: ignore[no-untyped-def]
        sent.append(message["type"])

    await watch({"type": "lifespan"}, receive, send)
    return sent


async def test_a_failure_reported_after_startup_complete_ends_the_server() -> None:
    server = FakeServer()
    watch = BrokerStartWatch(
        lifespan_app(["lifespan.startup.complete", "lifespan.shutdown.failed"])
    )
    watch.server = server  # type: ignore[assignment]

    sent = await drive(watch, ["lifespan.startup"])

    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.failed"]
    assert server.should_exit is True
    assert watch.failure == (
        "aiokafka.errors.KafkaConnectionError: Unable to bootstrap from [('127.0.0.1', 1)]"
    )


async def test_a_failed_shutdown_that_was_asked_for_is_not_a_failed_start() -> None:
    server = FakeServer()
    watch = BrokerStartWatch(
        lifespan_app(["lifespan.startup.complete", "wait-shutdown", "lifespan.shutdown.failed"])
    )
    watch.server = server  # type: ignore[assignment]

    await drive(watch, ["lifespan.startup", "lifespan.shutdown"])

    assert watch.failure is None
    assert server.should_exit is False


def test_last_line_is_the_exception() -> None:
    assert last_line(TRACEBACK).startswith("aiokafka.errors.KafkaConnectionError")
    assert last_line("\n \n") == ""


@pytest.fixture
def slow_refusal() -> Iterator[int]:
    """A port that accepts connections and closes them a second later, answering nothing: the
    broker's connection fails after FastStream already reported startup complete."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def close_later(connection: socket.socket) -> None:
        time.sleep(1.0)
        connection.close()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=close_later, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=2)
    listener.close()


SERVICE_WHOSE_BROKER_GOES_AWAY = """
import sys
from discospace.runtime import ServiceSettings, create_service, runner
from discospace.runtime import service as service_module

async def topics_exist(*args, **kwargs):
    # The broker answered the check at start, then went away (as in the chaos run).
    return None

service_module.provision_topics = topics_exist
runner._check_kafka = lambda service: None
settings = ServiceSettings(kafka_bootstrap_servers=sys.argv[1], http_port=int(sys.argv[2]))
runner.run(create_service(settings, description="A service whose broker goes away."))
"""


@pytest.mark.timeout(60)
def test_a_service_whose_broker_does_not_start_exits_2_with_a_sentence(slow_refusal: int) -> None:
    broker_and_port = [f"127.0.0.1:{slow_refusal}", str(free_port())]
    started = time.monotonic()
    ended = subprocess.run(
        [sys.executable, "-c", SERVICE_WHOSE_BROKER_GOES_AWAY, *broker_and_port],
        capture_output=True,
        text=True,
        timeout=50,
    )

    assert ended.returncode == runner.EXIT_BAD_START, ended.stderr[-2000:]
    assert time.monotonic() - started < 40
    sentences = [line for line in ended.stderr.splitlines() if not line.startswith("{")]
    assert sentences[-1].startswith("discospace service cannot start: its broker did not start")
    assert "KafkaConnectionError" in sentences[-1]


WITHOUT_A_BROKER = """
import gc, sys
from discospace.runtime import ServiceSettings, create_service, runner
from discospace.runtime import service as service_module

async def topics_exist(*args, **kwargs):
    return None

service_module.provision_topics = topics_exist
runner._check_kafka = lambda service: None
service = create_service(
    ServiceSettings(http_port=int(sys.argv[1])), description="A service that never consumes."
)
"""
"""A service process that runs without a broker: its start-up hooks run, then it exits."""

SERVICE_WHOSE_START_FAILS = (
    WITHOUT_A_BROKER
    + """
async def fail():
    raise ValueError("the catalog file is not there")

service.on_startup(fail)
runner.run(service)
"""
)


@pytest.mark.timeout(60)
def test_a_service_whose_start_up_fails_exits_2_with_a_sentence_not_3() -> None:
    ended = subprocess.run(
        [sys.executable, "-c", SERVICE_WHOSE_START_FAILS, str(free_port())],
        capture_output=True,
        text=True,
        timeout=50,
    )

    assert ended.returncode == runner.EXIT_BAD_START, ended.stderr[-2000:]
    sentences = [line for line in ended.stderr.splitlines() if not line.startswith("{")]
    assert sentences[-1] == (
        "discospace service cannot start: its start-up failed "
        "(ValueError: the catalog file is not there)."
    )


SERVICE_REPORTING_ITS_COLLECTOR = (
    WITHOUT_A_BROKER
    + """
async def report():
    print("threshold", gc.get_threshold()[0], "frozen", gc.get_freeze_count(), flush=True)
    raise ValueError("reported")

service.on_startup(report)
runner.run(service)
"""
)


@pytest.mark.timeout(60)
def test_a_service_process_runs_with_its_settings_young_threshold_and_start_up_frozen() -> None:
    environment = {**os.environ, "DISCOSPACE_SERVICE_GC_YOUNG_THRESHOLD": "12345"}
    ended = subprocess.run(
        [sys.executable, "-c", SERVICE_REPORTING_ITS_COLLECTOR, str(free_port())],
        capture_output=True,
        text=True,
        timeout=50,
        env=environment,
    )

    assert ended.returncode == runner.EXIT_BAD_START, ended.stderr[-2000:]
    [report] = [line for line in ended.stdout.splitlines() if line.startswith("threshold")]
    _, threshold, _, frozen = report.split()
    assert int(threshold) == 12345
    assert int(frozen) > 10_000  # the modules and the app built before serving


SERVICE_WHOSE_SEND_FAILS = """
import asyncio, sys
from aiokafka.errors import KafkaTimeoutError
from discospace.events import TopicNames
from discospace.runtime import ServiceSettings, create_service, runner

settings = ServiceSettings(
    kafka_bootstrap_servers=sys.argv[1],
    http_port=int(sys.argv[2]),
    topic_prefix=TopicNames.unique("send-fails").prefix,
)
service = create_service(settings, description="A service whose send is never confirmed.")

async def fail_a_send():
    # A send left to the service by a handler, which the producer then gives up on.
    sent = asyncio.get_running_loop().create_future()
    service.unconfirmed.track(sent)

    async def give_up():
        await asyncio.sleep(0.5)
        sent.set_exception(KafkaTimeoutError("the batch expired"))

    asyncio.get_running_loop().create_task(give_up())

service.after_startup(fail_a_send)
runner.run(service)
"""


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_a_running_service_whose_send_failed_stops_with_status_1_and_a_sentence(
    kafka_bootstrap: str,
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", SERVICE_WHOSE_SEND_FAILS, kafka_bootstrap, str(free_port())],
        capture_output=True,
        text=True,
        timeout=80,
    )

    assert ended.returncode == runner.EXIT_FAILED, ended.stderr[-2000:]
    sentences = [line for line in ended.stderr.splitlines() if not line.startswith("{")]
    assert sentences[-1] == (
        "discospace service stopped: an event this service published was not confirmed by "
        "Kafka (KafkaTimeoutError: the batch expired)."
    )
    assert "Traceback" not in ended.stderr


def test_an_http_port_in_use_is_refused_with_a_sentence_before_kafka_is_tried(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        settings = ServiceSettings(http_port=port)
        with pytest.raises(SystemExit) as ended:
            runner._check_http(create_service(settings, description="A probe."))

    assert ended.value.code == runner.EXIT_BAD_START
    assert capsys.readouterr().err == (
        f"discospace service cannot start: /health and /metrics cannot listen on 127.0.0.1:{port}"
        " (Address already in use); set DISCOSPACE_SERVICE_HTTP_PORT to a free port, or "
        "DISCOSPACE_SERVICE_HTTP_HOST to an address of this machine.\n"
    )


def test_a_free_http_port_passes_the_check() -> None:
    settings = ServiceSettings(http_port=free_port())
    runner._check_http(create_service(settings, description="A probe."))


class _Mapped(ServiceSettings):
    options: dict[str, int] = {}


def test_a_setting_whose_variable_is_not_json_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DISCOSPACE_SERVICE_OPTIONS", "{not json")
    with pytest.raises(SystemExit) as ended:
        runner.build(lambda: create_service(_Mapped(), description="A probe."), "probe")

    assert ended.value.code == runner.EXIT_BAD_START
    assert capsys.readouterr().err == (
        "discospace probe cannot start: setting options: not valid JSON (Expecting property "
        "name enclosed in double quotes: line 1 column 2 (char 1)).\n"
    )


def test_a_validator_s_sentence_is_given_without_pydantic_s_prefix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka")
    with pytest.raises(SystemExit):
        runner.build(lambda: create_service(ServiceSettings(), description="A probe."), "probe")

    assert capsys.readouterr().err == (
        "discospace probe cannot start: setting kafka_bootstrap_servers: 'kafka' is not "
        "host:port (a port from 1 to 65535); give KAFKA_BOOTSTRAP_SERVERS as a comma-separated "
        "list of host:port\n"
    )
