"""The explorer's domain metrics, on the service's registry (no label names an operation)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from discospace.events import OperationCompleted, OperationFailed, SamplesRequested
from discospace.explorer.operation import Decision


@dataclass(frozen=True)
class ExplorerMetrics:
    """Decisions by type, retries, operations running and how they ended."""

    decisions: Counter
    retries: Counter
    operations_active: Gauge
    operations_finished: Counter
    replayed_events: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ExplorerMetrics:
        return cls(
            decisions=Counter(
                "discospace_explorer_decisions",
                "Decisions the explorer published, by event type.",
                ["event_type"],
                registry=registry,
            ),
            retries=Counter(
                "discospace_explorer_retries",
                "Measurements asked for again after a transient failure.",
                registry=registry,
            ),
            operations_active=Gauge(
                "discospace_operations_active",
                "Operations requested and not finished.",
                registry=registry,
            ),
            operations_finished=Counter(
                "discospace_operations_finished",
                "Operations that ended, by stop reason ('failed' when they failed).",
                ["stop_reason"],
                registry=registry,
            ),
            replayed_events=Counter(
                "discospace_explorer_replayed_events",
                "Events folded while replaying the topics at start.",
                registry=registry,
            ),
        )

    def published(self, decisions: Iterable[Decision]) -> None:
        for decision in decisions:
            self.decisions.labels(event_type=decision.type).inc()
            if isinstance(decision, SamplesRequested) and decision.attempt > 1:
                self.retries.inc()
            if isinstance(decision, OperationCompleted):
                self.operations_finished.labels(stop_reason=decision.stop_reason).inc()
            if isinstance(decision, OperationFailed):
                self.operations_finished.labels(stop_reason="failed").inc()
