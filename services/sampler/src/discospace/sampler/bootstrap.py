"""The sampler's composition root: its parts, built once per process on the service.

`bootstrap(service, settings, spaces_behind)` builds what the handlers (`handlers.py`) work
with: the folded state (also `service.state`), the domain metrics on the service's registry, one
`publish` that sends each answer to its topic (operations, the pool's measure topic,
measurements), the clock, the waits from the settings, and how far behind the spaces follower
is. `app.py` only wires handlers to consumers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from discospace.events import (
    Event,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    SamplesDrawn,
)
from discospace.runtime import EventPublisher, Service
from discospace.sampler.domain import SamplerState
from discospace.sampler.handlers import SamplerDeps
from discospace.sampler.metrics import SamplerMetrics
from discospace.sampler.settings import SamplerSettings


def bootstrap(
    service: Service,
    settings: SamplerSettings,
    spaces_behind: Callable[[], Awaitable[int | None]],
) -> SamplerDeps:
    """The sampler's parts, on `service`'s broker, clock and metrics registry;
    `spaces_behind` tells how much of the spaces topic is still to be read (its follower's)."""
    state = service.state = SamplerState()
    return SamplerDeps(
        state=state,
        metrics=SamplerMetrics.create(service.metrics.registry, lambda: len(state.memo)),
        publish=_publishers(service),
        clock=service.clock,
        space_wait_s=settings.space_wait_s,
        first_request_wait_s=settings.first_request_wait_s,
        in_flight_wait_s=settings.in_flight_wait_s,
        spaces_behind=spaces_behind,
    )


def _publishers(service: Service) -> Callable[[Event], Awaitable[None]]:
    """One `publish(event)` that sends each answer to its topic."""
    topics = service.topics
    to_operations = service.publisher(
        topics.operations, SamplesDrawn, description="Which entities each request drew."
    )
    to_measure = service.publisher(
        f"{topics.prefix}.measure.{{pool}}",
        MeasurementRequested,
        description="Measurement requests, one topic per GPU pool.",
        route=lambda event: event.topic(topics),
    )
    to_measurements = service.publisher(
        topics.measurements,
        MeasurementReused,
        MeasurementFailed,
        description="Measurements reused from the sample store, and pairs no pool can take.",
    )
    by_type: dict[type[Event], EventPublisher] = {
        SamplesDrawn: to_operations,
        MeasurementRequested: to_measure,
        MeasurementReused: to_measurements,
        MeasurementFailed: to_measurements,
    }

    async def publish(event: Event) -> None:
        await by_type[type(event)](event)

    return publish
