"""An actuator worker's wiring: requests in from its pool's topic, outcomes out on
`measurements`, its catalog announced on `actuators` once connected, and the operations topic
followed to drop the work of operations that ended.

The worker runs `concurrency` consumers of the pool's group, so it measures up to that many
requests at once. A request's offset is committed only after its result is published: a worker
killed mid-measurement leaves the request to another worker of the pool.
"""

from __future__ import annotations

import logging

from discospace.actuator.cancellation import EndedOperations
from discospace.actuator.domain import announcement
from discospace.actuator.isolation import ChildProcessRunner
from discospace.actuator.metrics import WorkerMetrics
from discospace.actuator.plugin import AnyActuator
from discospace.actuator.plugins import load_actuator
from discospace.actuator.settings import ActuatorSettings
from discospace.actuator.worker import Worker, runner_for
from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementStarted,
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
)
from discospace.events.factory import Clock, utc_now
from discospace.runtime import Service, create_service

DESCRIPTION = (
    "A worker of one GPU pool: consumes the pool's measure topic (one consumer group per "
    "pool), runs each experiment through its actuator plugin (in a child process when the "
    "plugin runs code), emits MeasurementStarted, then MeasurementCompleted or "
    "MeasurementFailed, stops the work of operations that ended, and announces its catalog."
)

logger = logging.getLogger("discospace.actuator")


def create_app(
    settings: ActuatorSettings | None = None,
    *,
    clock: Clock = utc_now,
    actuator: AnyActuator | None = None,
) -> Service:
    """The actuator worker, ready to run; `actuator` replaces the configured plugin (tests)."""
    settings = settings or ActuatorSettings()
    plugin = actuator or load_actuator(settings.actuator, settings.plugin_parameters())
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    runner = runner_for(plugin, settings.memory_limit_mb)
    worker = Worker(
        plugin,
        settings.worker_id,
        service.clock,
        WorkerMetrics.create(service.metrics.registry),
        runner=runner,
        timeout=settings.timeout,
        operations=EndedOperations(),
    )
    service.state = worker
    if isinstance(runner, ChildProcessRunner):
        service.on_startup(runner.warm_up)
    _follow_operations(service, worker.operations)
    _announce_at_start(service, settings, plugin)
    _measure_requests(service, settings, worker)
    return service


def _follow_operations(service: Service, operations: EndedOperations) -> None:
    follow = service.consumer(
        service.topics.operations,
        replay=True,
        description="Operations, to stop the work of those that were cancelled or ended.",
    )

    @follow
    async def on_operation_ended(
        event: OperationCancelRequested | OperationCompleted | OperationFailed,
    ) -> None:
        operations.record(event)


def _announce_at_start(service: Service, settings: ActuatorSettings, plugin: AnyActuator) -> None:
    to_actuators = service.publisher(
        service.topics.actuators, ActuatorRegistered, description="This worker's catalog."
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


def _measure_requests(service: Service, settings: ActuatorSettings, worker: Worker) -> None:
    to_measurements = service.publisher(
        service.topics.measurements,
        MeasurementStarted,
        MeasurementCompleted,
        MeasurementFailed,
        description="What became of each measurement request.",
    )

    async def on_measurement_requested(event: MeasurementRequested) -> None:
        async for answer in worker.handle(event):
            await to_measurements(answer)

    for _ in range(settings.concurrency):
        consumer = service.consumer(
            service.topics.measure(settings.pool),
            description="This pool's requests.",
            max_poll_interval_ms=settings.max_poll_interval_ms,
        )
        consumer(on_measurement_requested)
