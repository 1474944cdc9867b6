"""An actuator worker's composition root: its parts, built once per process on the service.

`bootstrap(service, settings, actuator)` builds what the handlers (`handlers.py`) work with:
the plugin (from the settings, or the one given), the runner (a child process per measurement
for an isolated plugin), the `Worker` with its metrics, timeout and the operations that ended
(also `service.state`), and the publishers of outcomes and of the catalog. `app.py` only wires.
"""

from __future__ import annotations

from discospace.actuator.cancellation import EndedOperations
from discospace.actuator.handlers import ActuatorDeps
from discospace.actuator.metrics import WorkerMetrics
from discospace.actuator.plugin import AnyActuator
from discospace.actuator.plugins import ActuatorConfigError, load_actuator
from discospace.actuator.settings import ActuatorSettings
from discospace.actuator.worker import Worker, runner_for
from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementStarted,
)
from discospace.runtime import Service


def bootstrap(
    service: Service, settings: ActuatorSettings, actuator: AnyActuator | None = None
) -> ActuatorDeps:
    """The worker's parts, on `service`'s broker, clock and metrics registry."""
    plugin = actuator or load_actuator(settings.actuator, settings.plugin_parameters())
    if settings.concurrency > 1 and getattr(plugin, "one_at_a_time", False):
        raise ActuatorConfigError(
            f"Actuator '{plugin.name}' measures on one whole GPU: run it with concurrency 1, "
            "one worker per GPU (CUDA_VISIBLE_DEVICES names each one's), not concurrency "
            f"{settings.concurrency}."
        )
    worker = service.state = Worker(
        plugin,
        settings.worker_id,
        service.clock,
        WorkerMetrics.create(service.metrics.registry, pool=settings.pool),
        runner=runner_for(plugin, settings.memory_limit_mb),
        timeout=settings.timeout,
        operations=EndedOperations(),
        max_message_bytes=settings.max_message_bytes,
    )
    to_actuators = service.publisher(
        service.topics.actuators, ActuatorRegistered, description="This worker's catalog."
    )
    to_measurements = service.publisher(
        service.topics.measurements,
        MeasurementStarted,
        MeasurementCompleted,
        MeasurementFailed,
        description="What became of each measurement request.",
    )
    return ActuatorDeps(settings, plugin, worker, to_measurements, to_actuators)
