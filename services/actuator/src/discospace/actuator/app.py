"""An actuator worker's wiring: requests in from its pool's topic, outcomes out on
`measurements`, and its catalog announced on `actuators` once connected.

The worker runs `concurrency` consumers of the pool's group, so it measures up to that many
requests at once. A request's offset is committed only after its result is published: a worker
killed mid-measurement leaves the request to another worker of the pool.
"""

from __future__ import annotations

import logging

from discospace.actuator.domain import announcement
from discospace.actuator.plugin import Actuator
from discospace.actuator.plugins import load_actuator
from discospace.actuator.settings import ActuatorSettings
from discospace.actuator.worker import Worker, WorkerMetrics
from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementStarted,
)
from discospace.events.factory import Clock, utc_now
from discospace.runtime import Service, create_service

DESCRIPTION = (
    "A worker of one GPU pool: consumes the pool's measure topic (one consumer group per "
    "pool), runs each experiment through its actuator plugin, emits MeasurementStarted, then "
    "MeasurementCompleted or MeasurementFailed, and announces its catalog at start."
)

logger = logging.getLogger("discospace.actuator")


def create_app(
    settings: ActuatorSettings | None = None,
    *,
    clock: Clock = utc_now,
    actuator: Actuator | None = None,
) -> Service:
    """The actuator worker, ready to run; `actuator` replaces the configured plugin (tests)."""
    settings = settings or ActuatorSettings()
    plugin = actuator or load_actuator(settings.actuator, settings.plugin_parameters())
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    topics = service.topics
    worker = Worker(
        plugin, settings.worker_id, service.clock, WorkerMetrics.create(service.metrics.registry)
    )
    service.state = worker
    to_actuators = service.publisher(
        topics.actuators, ActuatorRegistered, description="This worker's catalog."
    )
    to_measurements = service.publisher(
        topics.measurements,
        MeasurementStarted,
        MeasurementCompleted,
        MeasurementFailed,
        description="What became of each measurement request.",
    )

    @service.after_startup
    async def announce() -> None:
        catalog = plugin.catalog()
        await to_actuators(
            announcement(
                plugin.name,
                settings.pool,
                settings.worker_id,
                catalog,
                service.clock(),
                settings.gpu_model,
            )
        )
        logger.info("announced %d experiments on pool %s", len(catalog), settings.pool)

    async def on_measurement_requested(event: MeasurementRequested) -> None:
        async for answer in worker.handle(event):
            await to_measurements(answer)

    for _ in range(settings.concurrency):
        service.consumer(topics.measure(settings.pool), description="This pool's requests.")(
            on_measurement_requested
        )
    return service
