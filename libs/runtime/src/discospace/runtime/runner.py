"""Running a service as a process: uvicorn serves the ASGI app, SIGTERM stops it cleanly.

On SIGTERM (or SIGINT) uvicorn stops accepting HTTP requests and runs the app's shutdown: the
broker stops fetching, waits up to `graceful_timeout_s` for the in-flight message to finish
(then it is committed), or hands it back uncommitted when it does not finish in time, and the
process exits 0.

What an operator can get wrong (a setting, an unreachable broker, a catalog file) ends the
process with one sentence on stderr and status 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

import uvicorn
from aiokafka.errors import KafkaError
from pydantic import ValidationError

from discospace.runtime.logs import configure_logging
from discospace.runtime.service import Service

EXIT_BAD_START = 2
logger = logging.getLogger("discospace.runtime.runner")


def _note_signal(signum: int, frame: FrameType | None) -> None:
    """After a graceful shutdown uvicorn re-raises the signal it caught; it is handled here,
    so the process ends with status 0 instead of being killed by the default handler."""


def describe_settings_error(error: ValidationError) -> str:
    """`setting http_port: Input should be a valid integer` for the first problem."""
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "settings"
    return f"setting {where}: {first['msg']}"


def _refuse_start(name: str, reason: str) -> NoReturn:
    print(f"discospace {name} cannot start: {reason}", file=sys.stderr)
    sys.exit(EXIT_BAD_START)


def build(factory: Callable[[], Service], name: str) -> Service:
    """`factory()`, or exit with one sentence when the service is misconfigured."""
    try:
        return factory()
    except ValidationError as error:
        _refuse_start(name, describe_settings_error(error))
    except (ValueError, OSError) as error:
        _refuse_start(name, str(error))


def _check_kafka(service: Service) -> None:
    """Reach the broker and create missing topics now, to fail with a sentence if it is down."""
    try:
        asyncio.run(service.provision_topics())
    except (KafkaError, OSError) as error:
        servers = service.settings.kafka_bootstrap_servers
        _refuse_start(service.name, f"Kafka at {servers} did not answer ({error}).")


def server(service: Service) -> uvicorn.Server:
    """The uvicorn server of `service`, logging through the process's JSON logs."""
    settings = service.settings
    config = uvicorn.Config(
        service.app,
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
    _check_kafka(service)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _note_signal)
    instance = server(service)
    instance.run()
    if not instance.started:
        logger.error("the service did not start; see the lines above")
        sys.exit(EXIT_BAD_START)


def serve(factory: Callable[[], Service], name: str) -> None:
    """The `__main__` of a service: build it from the environment and run it."""
    run(build(factory, name))
