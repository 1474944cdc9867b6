"""One Prometheus registry per service: FastStream's message metrics and the domain metrics.

Labels are bounded sets (a reason kind, an event type, an exception class, a consumer group
and topic); never an entity, operation or event id. The label sets known in advance (every
reason a message can be dead-lettered for) are listed at zero from the start, so a dashboard
reads 0 rather than "No data" until the first one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from faststream.asgi.types import ASGIApp
from prometheus_client import CollectorRegistry, Counter, Gauge, make_asgi_app
from prometheus_client.registry import Collector

from discospace.events.codec import DecodeErrorKind

HANDLER_FAILED = "handler_failed"
"""The reason kind of a message whose handler kept failing (not transiently): `failures.py`."""

DEAD_LETTER_REASON_KINDS = (
    *(kind for kind in get_args(DecodeErrorKind) if kind != "unexpected_type"),
    HANDLER_FAILED,
)
"""Why a message can be dead-lettered: it could not be read (a valid event of an unexpected type
is ignored instead), or its handler failed on it `handler_max_attempts` times."""


@dataclass(frozen=True)
class RuntimeMetrics:
    """The metrics the runtime itself keeps, next to FastStream's `faststream_*` ones."""

    registry: CollectorRegistry
    dead_lettered: Counter
    ignored: Counter
    handler_failures: Counter
    duplicates_dropped: Counter
    consumer_lag: Gauge

    @classmethod
    def create(cls, service: str, registry: CollectorRegistry | None = None) -> RuntimeMetrics:
        registry = registry or CollectorRegistry()
        info = Gauge(
            "discospace_service_info",
            "Always 1; names the service.",
            ["service"],
            registry=registry,
        )
        info.labels(service=service).set(1)
        dead_lettered = Counter(
            "discospace_dead_lettered",
            "Messages sent to the dead-letter topic, by why they could not be read or handled.",
            ["reason_kind"],
            registry=registry,
        )
        for kind in DEAD_LETTER_REASON_KINDS:
            dead_lettered.labels(reason_kind=kind)
        return cls(
            registry=registry,
            dead_lettered=dead_lettered,
            ignored=Counter(
                "discospace_ignored_events",
                "Valid events read from a topic that no handler of this service takes.",
                ["event_type"],
                registry=registry,
            ),
            handler_failures=Counter(
                "discospace_handler_failures",
                "Handler errors, by exception class; the message is delivered again (transient "
                "errors without bound, others up to handler_max_attempts tries, then it is "
                "dead-lettered).",
                ["exception"],
                registry=registry,
            ),
            duplicates_dropped=Counter(
                "discospace_duplicate_events_dropped",
                "Redelivered events dropped because their id was already handled.",
                registry=registry,
            ),
            consumer_lag=Gauge(
                "discospace_consumer_lag",
                "Messages not read yet by this process's consumers, per consumer group and "
                "topic (over the partitions it owns; sum over a group's members).",
                ["group", "topic"],
                registry=registry,
            ),
        )

    def show_consumed(self, prometheus: Any, app_name: str, topic: str) -> None:
        """Create FastStream's received-message series of `topic` at zero, so /metrics lists
        them from the start instead of after the first message (no gaps in dashboards).

        FastStream keeps its counters in the middleware's metrics container; if a later
        version moves them, the series simply appear with the first message again.
        """
        container = getattr(prometheus, "_metrics_container", None)
        for name in ("received_messages_total", "received_processed_messages_total"):
            counter = getattr(container, name, None)
            labels = {"app_name": app_name, "broker": "kafka", "handler": topic}
            if counter is not None and name == "received_processed_messages_total":
                labels["status"] = "acked"
            if counter is not None:
                counter.labels(**labels)

    def register(self, collector: Collector) -> None:
        """Add a service's own collector (domain metrics) to the service's registry."""
        self.registry.register(collector)

    def asgi_app(self) -> ASGIApp:
        """The /metrics endpoint: Prometheus text of this registry."""
        return make_asgi_app(self.registry)
