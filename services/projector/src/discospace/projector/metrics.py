"""The projector's domain metrics, on the service's registry (labels: event types only, every
one listed at zero from the start)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from discospace.events import all_event_types


@dataclass(frozen=True)
class ProjectorMetrics:
    """What the projector wrote, skipped, and holds between reading and writing."""

    projected: Counter
    skipped: Counter
    buffered: Gauge
    write_seconds: Histogram
    write_failures: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ProjectorMetrics:
        projected = Counter(
            "discospace_projected_events",
            "Events written to the store (raw log and projection tables), by type.",
            ["event_type"],
            registry=registry,
        )
        for event_type in all_event_types():
            projected.labels(event_type=event_type.type_name())
        return cls(
            projected=projected,
            skipped=Counter(
                "discospace_projection_skipped_events",
                "Events not written: read again below the offsets the store recorded, or copies "
                "of an event the store holds (the first copy wins).",
                registry=registry,
            ),
            buffered=Gauge(
                "discospace_projection_buffered_events",
                "Events read from Kafka and not written to the store yet.",
                registry=registry,
            ),
            write_seconds=Histogram(
                "discospace_projection_write_seconds",
                "Time to write one batch to the store.",
                buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
                registry=registry,
            ),
            write_failures=Counter(
                "discospace_projection_write_failures",
                "Batches the store refused; they are written again after a pause.",
                registry=registry,
            ),
        )
