"""An actuator worker's wiring: requests in from its pool's topic, outcomes out on
`measurements`, its catalog announced on `actuators` once connected, and the operations topic
followed to drop the work of operations that ended.

At start, before the broker consumes, the worker folds the ends of operations up to where the
operations topic ends (`Service.follow`): a request of an operation that ended before the
worker started is skipped, never started. The worker runs `concurrency` consumers of the pool's
group, so it measures up to that many requests at once. A request's offset is committed only
after its result is published: a worker killed mid-measurement leaves the request to another
worker of the pool. Handlers: `handlers.py`; their parts: `bootstrap.py`.
"""

from __future__ import annotations

import functools

from discospace.actuator.bootstrap import bootstrap
from discospace.actuator.handlers import announce, on_measurement_requested, on_operation_ended
from discospace.actuator.plugin import AnyActuator
from discospace.actuator.settings import ActuatorSettings
from discospace.events.factory import Clock, utc_now
from discospace.runtime import Service, bind, create_service

DESCRIPTION = (
    "A worker of one GPU pool: consumes the pool's measure topic (one consumer group per "
    "pool), runs each experiment through its actuator plugin (in a child process when the "
    "plugin runs code), emits MeasurementStarted, then MeasurementCompleted or "
    "MeasurementFailed, stops the work of operations that ended, and announces its catalog."
)


def create_app(
    settings: ActuatorSettings | None = None,
    *,
    clock: Clock = utc_now,
    actuator: AnyActuator | None = None,
) -> Service:
    """The actuator worker, ready to run; `actuator` replaces the configured plugin (tests)."""
    settings = settings or ActuatorSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    deps = bootstrap(service, settings, actuator)
    service.on_startup(deps.worker.warm_up)
    operations = service.follow(
        service.topics.operations,
        description="Operations, to stop the work of those that were cancelled or ended.",
    )
    operations(bind(on_operation_ended, deps))
    service.after_startup(functools.partial(announce, deps))
    for _ in range(settings.concurrency):
        requests = service.consumer(
            service.topics.measure(settings.pool),
            description="This pool's requests.",
            max_poll_interval_ms=settings.max_poll_interval_ms,
        )
        requests(bind(on_measurement_requested, deps))
    return service
