"""The sampler's wiring: sample requests in; drawn entities, requests to pools, reuses out."""

from __future__ import annotations

from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementRequested,
    MeasurementReused,
    SamplesDrawn,
    SamplesRequested,
    SpaceRegistered,
)
from discospace.events.factory import Clock, utc_now
from discospace.runtime import Service, create_service
from discospace.sampler.domain import SamplerState, draw, evolve_pools, evolve_space
from discospace.sampler.settings import SamplerSettings

DESCRIPTION = (
    "Turns SamplesRequested into entities drawn from the space without materialising it, "
    "reuses what the shared sample store already measured, and routes MeasurementRequested "
    "to the measure topic of a pool that runs the experiment."
)


def create_app(settings: SamplerSettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The sampler service, ready to run."""
    service = create_service(settings or SamplerSettings(), description=DESCRIPTION, clock=clock)
    state = service.state = SamplerState()
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
        topics.measurements, MeasurementReused, description="Measurements reused from the store."
    )
    publishers = {
        SamplesDrawn: to_operations,
        MeasurementRequested: to_measure,
        MeasurementReused: to_measurements,
    }

    async def publish(event: Event) -> None:
        await publishers[type(event)](event)

    @service.consumer(topics.spaces, replay=True, description="Registered spaces.")
    async def on_space_registered(event: SpaceRegistered) -> None:
        evolve_space(state, event)

    @service.consumer(topics.actuators, replay=True, description="Pools and their experiments.")
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        evolve_pools(state, event)

    @service.consumer(topics.operations, description="Requests for more samples.")
    async def on_samples_requested(event: SamplesRequested) -> None:
        for answer in draw(state, event, service.clock()):
            await publish(answer)

    return service
