"""Cross-service tests on the real broker: services in-process or as real processes.

Every test gets its own topic prefix (`TopicNames.unique`), so tests never see each other's
messages on the shared broker, and its own consumer groups (the group id starts with it).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.events import (
    ActuatorRegistered,
    SpaceSubmitted,
    TopicNames,
    new_event,
)
from discospace.runtime import Service
from discospace.runtime.contracts import SERVICES
from discospace.testing.clients import EventClient
from discospace.testing.kafka import free_port
from discospace.testing.loop import ServiceProcess
from discospace.testing.prometheus import (
    PrometheusClient,
    PrometheusProcess,
    PrometheusUnavailableError,
    find_binary,
    scrape_config,
)

REPO = Path(__file__).resolve().parents[2]


def utc_now() -> datetime:
    return datetime.now(UTC)


FINETUNE = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune-full-v1.2.0",
    target_properties=("train_tokens_per_second",),
    required_properties=("batch_size", "number_gpus"),
)


def submission(experiment: str = FINETUNE.experiment, sid: str = "sub-1") -> SpaceSubmitted:
    spec = SpaceSpec(
        sample_store="store-a",
        entity_space=(
            PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
            PropertySpec(name="number_gpus", values=(1, 2)),
        ),
        measurement_space=(ExperimentRef(actuator="SFTTrainer", experiment=experiment),),
    )
    return new_event(SpaceSubmitted, submission_id=sid, spec=spec, submitted_by="tester")


def catalog(worker: str = "worker-1") -> ActuatorRegistered:
    return new_event(
        ActuatorRegistered,
        actuator="SFTTrainer",
        pool="a100",
        experiments=(FINETUNE,),
        worker_id=worker,
    )


Kafka = EventClient


BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def benchmark(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """Import a benchmark script of `benchmarks/` by its module name (`bench_rebuild`)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module


@pytest.fixture
def kafka(kafka_bootstrap: str) -> Kafka:
    return Kafka(kafka_bootstrap)


@pytest.fixture
def topics() -> TopicNames:
    return TopicNames.unique("it")


@pytest.fixture
def make_submission() -> Callable[..., SpaceSubmitted]:
    return submission


@pytest.fixture
def make_catalog() -> Callable[..., ActuatorRegistered]:
    return catalog


@asynccontextmanager
async def running(service: Service) -> AsyncIterator[Service]:
    """Run `service` in this process: startup hooks, broker connected, consumers assigned."""
    async with service.app.start_lifespan_context():
        yield service


@pytest.fixture
def run_service() -> Callable[[Service], Any]:
    return running


async def eventually(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not true after {timeout_s}s"
        await asyncio.sleep(0.05)


@pytest.fixture
def wait_until() -> Callable[..., Awaitable[None]]:
    return eventually


def launch(
    name: str, bootstrap: str, topics: TopicNames, workdir: Path, **env: str
) -> ServiceProcess:
    """`python -m discospace.<name>` on `topics`, with a free port and its log in `workdir`."""
    port = free_port()
    environment = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "DISCOSPACE_TOPIC_PREFIX": topics.prefix,
        f"DISCOSPACE_{name.upper()}_HTTP_PORT": str(port),
        "DISCOSPACE_STORE_DATA_DIR": str(workdir / f"store-{name}"),
        **env,
    }
    return ServiceProcess(name, name, port, environment, workdir / f"{name}.log").start()


def kill_all(processes: list[ServiceProcess]) -> None:
    for service in processes:
        service.kill()


@pytest.fixture
def service_process(
    kafka_bootstrap: str, topics: TopicNames, tmp_path: Path
) -> Iterator[Callable[..., ServiceProcess]]:
    """Factory: start a service as a process on this test's topics; stopped after the test."""
    started: list[ServiceProcess] = []

    def start(name: str, **env: str) -> ServiceProcess:
        started.append(launch(name, kafka_bootstrap, topics, tmp_path, **env))
        return started[-1]

    yield start
    kill_all(started)


@pytest.fixture(scope="module")
def every_service_scraped(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, ServiceProcess], PrometheusClient]]:
    """The five services as processes and one real Prometheus scraping each as its own job.

    One server for all: Prometheus applies new scrape targets at most every 5 s, so a server
    per service would cost that wait five times.
    """
    workdir = tmp_path_factory.mktemp("scraped")
    topics = TopicNames.unique("scraped")
    services = {name: launch(name, kafka_bootstrap, topics, workdir) for name in SERVICES}
    server = None
    try:
        for service in services.values():
            service.wait_healthy()
        jobs = {name: [f"127.0.0.1:{service.port}"] for name, service in services.items()}
        server = PrometheusProcess(find_binary(os.environ), scrape_config(jobs), workdir)
        server.wait_ready()
        yield services, server.client
    except PrometheusUnavailableError as error:
        pytest.fail(str(error), pytrace=False)
    finally:
        if server is not None:
            server.stop()
        kill_all(list(services.values()))
