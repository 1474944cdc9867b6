"""A worker's handlers called on their own, with hand-built parts: no app, no broker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from discospace.actuator.handlers import (
    ActuatorDeps,
    announce,
    on_measurement_requested,
    on_operation_ended,
)
from discospace.actuator.settings import ActuatorSettings
from discospace.actuator.synthetic import SyntheticActuator, SyntheticParameters
from discospace.actuator.worker import Worker
from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementStarted,
)


@dataclass
class Parts:
    """Hand-built parts: a synthetic plugin, outcomes and announcements land in lists."""

    clock: Any
    measurements: list[Event] = field(default_factory=list)
    announcements: list[ActuatorRegistered] = field(default_factory=list)

    def __post_init__(self) -> None:
        plugin = SyntheticActuator(SyntheticParameters())
        settings = ActuatorSettings(pool="p1", worker_id="w0", gpu_model="A100")
        worker = Worker(plugin, "w0", self.clock)
        self.deps = ActuatorDeps(settings, plugin, worker, self.to_measurements, self.announced)

    async def to_measurements(self, event: Event) -> None:
        self.measurements.append(event)

    async def announced(self, event: ActuatorRegistered) -> None:
        self.announcements.append(event)


async def test_a_request_is_measured_and_its_start_and_result_published_in_order(
    clock, make_request
):
    parts = Parts(clock)
    request = make_request(pool="p1")

    await on_measurement_requested(request, parts.deps)

    assert [type(e) for e in parts.measurements] == [MeasurementStarted, MeasurementCompleted]
    assert {e.request_id for e in parts.measurements} == {request.request_id}


async def test_a_request_of_an_operation_that_ended_is_answered_without_starting(
    clock, make_request, make_completion
):
    parts = Parts(clock)

    await on_operation_ended(make_completion("op-9"), parts.deps)
    await on_measurement_requested(make_request(pool="p1", operation="op-9"), parts.deps)

    [failed] = parts.measurements
    assert isinstance(failed, MeasurementFailed)
    assert (failed.reason, failed.retryable) == ("operation completed", False)


async def test_the_announcement_names_the_plugins_catalog_on_the_workers_pool(clock):
    parts = Parts(clock)

    await announce(parts.deps)

    [announced] = parts.announcements
    assert (announced.actuator, announced.pool, announced.gpu_model) == ("synthetic", "p1", "A100")
    assert announced.experiments == parts.deps.plugin.catalog()
