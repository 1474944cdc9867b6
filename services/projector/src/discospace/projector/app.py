"""The projector's wiring: every topic, measure topics included, into the store's event log."""

from __future__ import annotations

from faststream.kafka.annotations import KafkaMessage

from discospace.events import Event, MeasurementRequested
from discospace.events.factory import Clock, utc_now
from discospace.projector.adapters import EventStore
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service, create_service
from discospace.store.client import StoreSettings

DESCRIPTION = (
    "Consumes every topic into the ClickHouse sample store (chDB embedded by default, or a "
    "server at CLICKHOUSE_URL) and serves the views: entities measured through a space or "
    "elsewhere in its store, sampled but unmeasured, operation progress."
)


def create_app(
    settings: ProjectorSettings | None = None,
    *,
    clock: Clock = utc_now,
    store: StoreSettings | None = None,
) -> Service:
    """The projector service, ready to run; the store opens when it starts."""
    settings = settings or ProjectorSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    events = service.state = EventStore(store or StoreSettings(), settings.consumer_group)
    service.on_startup(events.open)
    service.on_shutdown(events.close)
    topics = service.topics

    @service.consumer(*topics.fixed(), description="Every event of every fixed topic.")
    async def on_event(event: Event, message: KafkaMessage) -> None:
        await events.write(event, message.raw_message)

    @service.consumer(
        pattern=f"{topics.prefix}.measure.{{pool}}",
        group_suffix="measure",
        description="Measurement requests of every pool.",
    )
    async def on_measurement_requested(event: MeasurementRequested, message: KafkaMessage) -> None:
        await events.write(event, message.raw_message)

    return service
