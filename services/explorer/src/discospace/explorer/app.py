"""The explorer's wiring: spaces, operations and measurements in, decisions out on `operations`.

At start the explorer replays the three topics up to their end offsets (folding only), then
goes live: it decides for every operation from the complete history, and from then on for each
event its consumer reads. It is one instance: it owns every operation.
"""

from __future__ import annotations

import logging

from discospace.events import (
    OperationCompleted,
    OperationFailed,
    OperationStarted,
    SamplesRequested,
    SpaceRegistered,
)
from discospace.events.factory import Clock, utc_now
from discospace.explorer.domain import (
    Engine,
    MeasurementInput,
    OperationInput,
    OperatorRegistry,
    known_operators,
)
from discospace.explorer.live import LiveExplorer
from discospace.explorer.metrics import ExplorerMetrics
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime import Service, create_service
from discospace.runtime.replay import replay

DESCRIPTION = (
    "Owns operations: folds each operation's history (requests, decisions, measurements) and "
    "runs its operator to emit OperationStarted, SamplesRequested and OperationCompleted."
)
logger = logging.getLogger("discospace.explorer")


def create_app(
    settings: ExplorerSettings | None = None,
    *,
    clock: Clock = utc_now,
    operators: OperatorRegistry | None = None,
) -> Service:
    """The explorer service, ready to run; `service.state` is its `LiveExplorer`."""
    settings = settings or ExplorerSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    topics = service.topics
    to_operations = service.publisher(
        topics.operations,
        OperationStarted,
        SamplesRequested,
        OperationCompleted,
        OperationFailed,
        description="The explorer's decisions about each operation.",
    )
    engine = Engine(operators or known_operators(), settings.timing)
    metrics = ExplorerMetrics.create(service.metrics.registry)
    explorer = LiveExplorer(engine, to_operations, service.clock, metrics, settings.publish_retry_s)
    service.state = explorer
    consumer = service.consumer(
        topics.spaces,
        topics.operations,
        topics.measurements,
        description="Registered spaces, operation histories and what became of measurements.",
    )

    @consumer
    async def on_space_registered(event: SpaceRegistered) -> None:
        await explorer.handle(event)

    @consumer
    async def on_operation_event(event: OperationInput) -> None:
        await explorer.handle(event)

    @consumer
    async def on_measurement_event(event: MeasurementInput) -> None:
        await explorer.handle(event)

    @service.on_startup
    async def replay_history() -> None:
        read = [topics.spaces, topics.operations, topics.measurements]
        report = await replay(settings.kafka_bootstrap_servers, read, explorer.fold)
        logger.info("replayed %d events (%d unreadable)", report.events, report.skipped)

    service.after_startup(explorer.go_live)
    service.on_shutdown(explorer.stop)
    return service
