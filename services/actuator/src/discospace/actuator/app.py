"""An actuator worker's wiring: requests in from its pool's topic, outcomes out on
`measurements`, and its catalog announced on `actuators` once connected."""

from __future__ import annotations

import logging

from discospace.actuator.domain import announcement, measure
from discospace.actuator.settings import ActuatorSettings
from discospace.core import ExperimentSpec, load_experiment_specs
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


def catalog(settings: ActuatorSettings) -> tuple[ExperimentSpec, ...]:
    """The experiments this worker offers: those of its catalog file, if it has one."""
    return load_experiment_specs(settings.catalog_file) if settings.catalog_file else ()


def create_app(settings: ActuatorSettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The actuator worker, ready to run."""
    settings = settings or ActuatorSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    topics = service.topics
    experiments = catalog(settings)
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
        await to_actuators(
            announcement(
                settings.actuator, settings.pool, settings.worker_id, experiments, service.clock()
            )
        )
        logger.info("announced %d experiments on pool %s", len(experiments), settings.pool)

    @service.consumer(topics.measure(settings.pool), description="This pool's requests.")
    async def on_measurement_requested(event: MeasurementRequested) -> None:
        await to_measurements.all(measure(event, service.clock()))

    return service
