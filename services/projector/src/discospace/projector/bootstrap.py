"""The projector's composition root: its parts, built once per process from settings.

`bootstrap` builds what the handler (`handlers.py`) works with: the domain metrics, the
store's worker (opened when the service starts), the buffer that writes batches to it, and
how an unreadable record is dead-lettered. `app.py` only wires them.
"""

from __future__ import annotations

from discospace.projector.adapters import StoreWorker
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.consuming import dead_letter_to
from discospace.projector.handlers import ProjectorDeps
from discospace.projector.metrics import ProjectorMetrics
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service
from discospace.store.client import StoreSettings

PROJECTION = "projector"
"""The name the store records the projection's offsets under: the store's own, whatever the
Kafka consumer group (a new group on the same store resumes where the store stands)."""


def bootstrap(service: Service, settings: ProjectorSettings, store: StoreSettings) -> ProjectorDeps:
    """The projector's parts, on `service`'s broker and metrics registry."""
    metrics = ProjectorMetrics.create(service.metrics.registry)
    worker = StoreWorker(store, PROJECTION, metrics)
    retry_s = max(settings.retry_backoff_s, 0.1)
    buffer = ProjectionBuffer(
        worker.write,
        metrics,
        max_batch=settings.batch_max_events,
        linger_s=settings.batch_linger_s,
        capacity=settings.buffer_capacity,
        retry_s=retry_s,
    )
    service.health_problems.append(buffer.problem)  # /health: 503 while the store refuses
    return ProjectorDeps(worker, buffer, dead_letter_to(service), retry_s)
