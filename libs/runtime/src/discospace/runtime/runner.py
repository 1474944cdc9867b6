"""Running a service as a process: uvicorn serves the ASGI app, SIGTERM stops it cleanly.

On SIGTERM (or SIGINT) uvicorn stops accepting HTTP requests and runs the app's shutdown: the
broker stops fetching, waits up to `graceful_timeout_s` for the in-flight message to finish
(then it is committed), or hands it back uncommitted when it does not finish in time, and the
process exits 0.

What an operator can get wrong (a setting, an unreachable broker, a catalog file) ends the
process with one sentence on stderr and status 2, never a traceback. An event the broker never
confirmed (`confirming.py`) stops the service the same clean way, and the process ends with one
sentence and status 1: its supervisor starts it again, and it reads on from its last commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

import uvicorn
from aiokafka.errors import KafkaError
from faststream.asgi.types import ASGIApp, Message, Receive, Scope, Send
from pydantic import ValidationError
from pydantic_settings import SettingsError

from discospace.runtime.collector import tune_collector
from discospace.runtime.confirming import SendFailedError
from discospace.runtime.logs import configure_logging
from discospace.runtime.provisioning import TopicsRefusedError
from discospace.runtime.security import KafkaLoginError
from discospace.runtime.service import Service

EXIT_BAD_START = 2
EXIT_FAILED = 1
"""A running service that had to stop: an event it published was never confirmed."""
logger = logging.getLogger("discospace.runtime.runner")


def _note_signal(signum: int, frame: FrameType | None) -> None:
    """After a graceful shutdown uvicorn re-raises the signal it caught; it is handled here,
    so the process ends with status 0 instead of being killed by the default handler."""


def describe_settings_error(error: ValidationError) -> str:
    """`setting http_port: Input should be a valid integer` for the first problem."""
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "settings"
    problem = first["msg"]
    if first["type"] == "value_error":  # a validator's own sentence, without "Value error, "
        problem = str(first.get("ctx", {}).get("error", problem))
    return f"setting {where}: {problem}"


def _refuse_start(name: str, reason: str) -> NoReturn:
    print(f"discospace {name} cannot start: {reason}", file=sys.stderr)
    sys.exit(EXIT_BAD_START)


def build(factory: Callable[[], Service], name: str) -> Service:
    """`factory()`, or exit with one sentence when the service is misconfigured."""
    try:
        return factory()
    except ValidationError as error:
        _refuse_start(name, describe_settings_error(error))
    except SettingsError as error:  # a complex setting's variable is not JSON
        field = re.search(r'field "(\w+)"', str(error))
        where = f"setting {field[1]}" if field else "a setting"
        _refuse_start(name, f"{where}: not valid JSON ({error.__cause__ or error}).")
    except (ValueError, OSError) as error:
        _refuse_start(name, str(error))


def _check_http(service: Service) -> None:
    """Bind the address of /health and /metrics once, to fail with a sentence now when it is
    taken or not this machine's (uvicorn would say so in log lines only after the start-up,
    folds included, had run)."""
    settings = service.settings
    host, port = settings.http_host, settings.http_port
    if port == 0 or not host.strip():  # any free port; every address (asyncio's reading)
        return
    try:
        for family, kind, protocol, _, address in socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            _bind_once(family, kind, protocol, address)
    except OSError as error:
        prefix = str(settings.model_config.get("env_prefix", ""))
        _refuse_start(
            service.name,
            f"/health and /metrics cannot listen on {host}:{port} ({error.strerror or error}); "
            f"set {prefix}HTTP_PORT to a free port, or {prefix}HTTP_HOST to an address of this "
            "machine.",
        )


def _bind_once(family: int, kind: int, protocol: int, address: tuple[Any, ...]) -> None:
    """Bind `address` and let it go, the way asyncio's server binds each address of its host
    (uvicorn's): SO_REUSEADDR, IPv6 only on an IPv6 socket, a family this machine lacks
    skipped."""
    try:
        probe = socket.socket(family, kind, protocol)
    except OSError:
        return
    with probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        probe.bind(address)


def _check_kafka(service: Service) -> None:
    """Reach the broker and create missing topics now, to fail with a sentence if it is down."""
    try:
        asyncio.run(service.provision_topics())
    except KafkaLoginError as error:  # a refused login or TLS: the security module's sentence
        _refuse_start(service.name, error.sentence)
    except TopicsRefusedError as error:
        _refuse_start(service.name, str(error))
    except (KafkaError, OSError) as error:
        servers = service.settings.kafka_bootstrap_servers
        _refuse_start(service.name, f"Kafka at {servers} did not answer ({error}).")


class BrokerStartWatch:
    """Ends the server when the broker fails to start after the app reported it started.

    FastStream's ASGI app tells uvicorn "startup complete" once the startup hooks ran, and only
    then connects its broker. When that connection fails (the broker went away between the
    check at start and the connection), the app reports it as a failed *shutdown*, and uvicorn
    goes on serving HTTP with no consumer: a process that neither consumes nor exits, which no
    supervisor restarts (the chaos suite found a projector so after a broker stop). This
    wrapper sees that report while no shutdown was asked for, and asks uvicorn to exit; `run`
    then ends the process with status 2 and one sentence, so the supervisor starts it again.
    A start-up that fails before "complete" (a hook, or the broker dying during it) ends the
    same way, with one sentence instead of uvicorn's bare exit status 3.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.server: uvicorn.Server | None = None
        self.failure: str | None = None
        """The last line of the traceback, when the start failed."""
        self.stage = "its broker did not start"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        asked_to_stop = False

        async def watched_receive() -> Message:
            nonlocal asked_to_stop
            message = await receive()
            asked_to_stop = asked_to_stop or message["type"] == "lifespan.shutdown"
            return message

        async def watched_send(message: Message) -> None:
            kind = message["type"]
            if kind == "lifespan.startup.failed":
                self.stage = "its start-up failed"
                self.failure = last_line(str(message.get("message") or "")) or "unknown error"
            if kind == "lifespan.shutdown.failed" and not asked_to_stop:
                self.failure = last_line(str(message.get("message") or "")) or "unknown error"
                if self.server is not None:
                    self.server.should_exit = True
            await send(message)

        await self.app(scope, watched_receive, watched_send)


def last_line(text: str) -> str:
    """The last non-empty line of a traceback: the exception and its message."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def server(service: Service, app: ASGIApp | None = None) -> uvicorn.Server:
    """The uvicorn server of `service` (or of `app` wrapping it), logging through JSON logs."""
    settings = service.settings
    config = uvicorn.Config(
        app or service.app,
        host=settings.http_host,
        port=settings.http_port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(settings.graceful_timeout_s) + 1,
    )
    return uvicorn.Server(config)


def run(service: Service) -> None:
    """Serve `service` until SIGTERM or SIGINT; exit 0 after a clean shutdown."""
    settings = service.settings
    configure_logging(service.name, settings.log_level, settings.log_repeat_interval_s)
    _check_http(service)
    _check_kafka(service)
    tune_collector(settings.gc_young_threshold)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _note_signal)
    watch = BrokerStartWatch(service.app)
    instance = server(service, watch)
    watch.server = instance

    def stop_failed(error: SendFailedError) -> None:  # `service.unconfirmed.failure` keeps it
        instance.should_exit = True

    service.unconfirmed.on_failure = stop_failed
    with contextlib.suppress(SystemExit):  # uvicorn's 3 for a failed start-up: said below
        instance.run()
    if watch.failure is not None:
        _refuse_start(service.name, f"{watch.stage} ({watch.failure}).")
    if not instance.started:
        logger.error("the service did not start; see the lines above")
        sys.exit(EXIT_BAD_START)
    if service.unconfirmed.failure is not None:
        print(f"discospace {service.name} stopped: {service.unconfirmed.failure}.", file=sys.stderr)
        sys.exit(EXIT_FAILED)


def serve(factory: Callable[[], Service], name: str) -> None:
    """The `__main__` of a service: build it from the environment and run it."""
    run(build(factory, name))
