"""An actuator worker's handlers: module-level functions of the event and the worker's parts.

Each takes the event (or nothing, for the announcement) and `ActuatorDeps` (built by
`bootstrap.py`); the app subscribes them bound to the parts (`discospace.runtime.bind`), so a
test runs one with hand-built parts, no app and no broker.

- `on_operation_ended`: folds the ends of operations (`cancellation.py`); the worker's follower
  hands it every end the operations topic holds at start, before any request is taken, then
  the live ones;
- `on_measurement_requested`: measures one request of the pool and publishes what became of
  it as it happens (`worker.py`); its offset is committed after the result is out. A result
  the publisher refuses as too large for one message (`EventTooLargeError`) is replaced by a
  failure saying so, so the request is answered and its partition moves on;
- `announce`: the worker's catalog on the actuators topic, once the broker is connected.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from discospace.actuator.cancellation import OperationEnd
from discospace.actuator.domain import Result, announcement
from discospace.actuator.plugin import AnyActuator
from discospace.actuator.settings import ActuatorSettings
from discospace.actuator.worker import Worker
from discospace.events import (
    ActuatorRegistered,
    EventTooLargeError,
    MeasurementCompleted,
    MeasurementRequested,
    MeasurementStarted,
)

logger = logging.getLogger("discospace.actuator")


@dataclass(frozen=True)
class ActuatorDeps:
    """What a worker's handlers work with."""

    settings: ActuatorSettings
    plugin: AnyActuator
    worker: Worker
    to_measurements: Callable[[MeasurementStarted | Result], Awaitable[None]]
    to_actuators: Callable[[ActuatorRegistered], Awaitable[None]]


async def on_operation_ended(event: OperationEnd, deps: ActuatorDeps) -> None:
    deps.worker.operations.record(event)


async def on_measurement_requested(event: MeasurementRequested, deps: ActuatorDeps) -> None:
    async for answer in deps.worker.handle(event):
        try:
            await deps.to_measurements(answer)
        except EventTooLargeError as error:
            if not isinstance(answer, MeasurementCompleted):
                raise
            await deps.to_measurements(deps.worker.too_large(event, error))


async def announce(deps: ActuatorDeps) -> None:
    """Publish the worker's catalog on its pool (a new announcement id at every start)."""
    settings, catalog = deps.settings, deps.plugin.catalog()
    await deps.to_actuators(
        announcement(
            deps.plugin.name,
            settings.pool,
            settings.worker_id,
            catalog,
            deps.worker.clock(),
            settings.gpu_model,
        )
    )
    logger.info("announced %d experiments on pool %s", len(catalog), settings.pool)
