"""The projector's composition root: its parts, built once per process from settings.

`bootstrap` builds what the handler (`handlers.py`) works with: the domain metrics, the
store's worker (opened when the service starts), the buffer that writes batches to it, and a
reader of the Kafka record being handled. `app.py` only wires them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from faststream._internal.context.repository import ContextRepo

from discospace.projector.adapters import StoreWorker
from discospace.projector.buffering import ProjectionBuffer
from discospace.projector.handlers import ProjectorDeps, Record
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
    buffer = ProjectionBuffer(
        worker.write,
        metrics,
        max_batch=settings.batch_max_events,
        linger_s=settings.batch_linger_s,
        capacity=settings.buffer_capacity,
        retry_s=max(settings.retry_backoff_s, 0.1),
    )
    return ProjectorDeps(worker, buffer, current_record(service.broker.context))


def current_record(context: ContextRepo) -> Callable[[], Record]:
    """The Kafka record of the message being handled, read from FastStream's context.

    The same value a `KafkaMessage` parameter would get, without FastStream's injection: that
    resolves every message's context in a worker thread.
    """

    def record() -> Record:
        return cast("Record", context.get_local("message").raw_message)

    return record
