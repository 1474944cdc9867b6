"""The explorer's wiring: spaces, operations and measurements in, decisions out on `operations`.

Every replica folds every event of the three topics, every partition, without a consumer
group: at start it replays them up to their end offsets (the runtime's replay, folding only),
then its consumer reads on from there (`LiveExplorer.handle`); how far it has read is tracked
per partition (`ReadPositions`). It decides only for the operations of the operations-topic
partitions the group `<prefix>.explorer` gives it (`Ownership`), once it has folded the topics
up to where they ended when it was given them.
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
from discospace.explorer.ownership import LogHistory, Ownership
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime import Service, create_service
from discospace.runtime.positions import ReadPositions, end_offsets
from discospace.runtime.replay import replay_until

SEEK_TIMEOUT_S = 10.0
logger = logging.getLogger("discospace.explorer")

DESCRIPTION = (
    "Owns operations: folds each operation's history (requests, decisions, measurements) and "
    "runs its operator to emit OperationStarted, SamplesRequested and OperationCompleted."
)


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
    positions = ReadPositions()
    service.broker.add_middleware(positions.middleware)
    history = LogHistory(settings.kafka_bootstrap_servers, topics, positions)
    explorer = LiveExplorer(
        engine, to_operations, service.clock, metrics, settings.publish_retry_s, history
    )
    service.state = explorer
    ownership = Ownership(settings, explorer, positions, metrics)
    consumer = service.consumer(
        topics.spaces,
        topics.operations,
        topics.measurements,
        replay=True,
        deduplicate=False,
        description="Registered spaces, operation histories and what became of measurements, "
        "every partition, read by every replica.",
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

    read = [topics.spaces, topics.operations, topics.measurements]
    replayed: dict[tuple[str, int], int] = {}

    @service.on_startup
    async def replay_history() -> None:
        replayed.update(await end_offsets(settings.kafka_bootstrap_servers, read))
        report = await replay_until(settings.kafka_bootstrap_servers, replayed, explorer.fold)
        for (topic, partition), end in replayed.items():
            positions.saw(topic, partition, end - 1)
        logger.info("replayed %d events (%d unreadable)", report.events, report.skipped)

    @service.after_startup
    async def read_on_after_the_replay() -> None:
        await consumer.seek_ahead(replayed, SEEK_TIMEOUT_S)

    service.after_startup(ownership.start)
    service.before_shutdown(ownership.stop)
    service.on_shutdown(explorer.stop)
    return service
