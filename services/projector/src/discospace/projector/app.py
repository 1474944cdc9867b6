"""The projector's wiring: every topic into the store, and the views over HTTP beside /health."""

from __future__ import annotations

from discospace.events.factory import Clock, utc_now
from discospace.projector.adapters import StoreWorker
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.consuming import subscribe_to_everything
from discospace.projector.metrics import ProjectorMetrics
from discospace.projector.routes import view_routes
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service, create_service
from discospace.store.client import StoreSettings

PROJECTION = "projector"
"""The name the store records the projection's offsets under: the store's own, whatever the
Kafka consumer group (a new group on the same store resumes where the store stands)."""
DESCRIPTION = (
    "Consumes every topic into the ClickHouse sample store (chDB embedded by default, or a "
    "server at CLICKHOUSE_URL) and serves the views: entities measured through a space or "
    "elsewhere in its store, sampled but unmeasured, never sampled; operation progress."
)


def create_app(
    settings: ProjectorSettings | None = None,
    *,
    clock: Clock = utc_now,
    store: StoreSettings | None = None,
) -> Service:
    """The projector service, ready to run; the store opens when it starts.

    `service.state` is the `StoreWorker` (views and writes), for tests.
    """
    settings = settings or ProjectorSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    metrics = ProjectorMetrics.create(service.metrics.registry)
    worker = service.state = StoreWorker(store or StoreSettings(), PROJECTION, metrics)
    buffer = ProjectionBuffer(
        worker.write,
        metrics,
        max_batch=settings.batch_max_events,
        linger_s=settings.batch_linger_s,
        capacity=settings.buffer_capacity,
        retry_s=max(settings.retry_backoff_s, 0.1),
    )
    service.on_startup(worker.open)
    service.on_startup(buffer.start)
    service.on_shutdown(buffer.stop)
    service.on_shutdown(worker.close)
    subscribe_to_everything(service, worker, buffer)
    for path, route in view_routes(worker.read):
        service.app.mount(path, route)
    return service
