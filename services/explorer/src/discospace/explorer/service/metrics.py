"""The explorer's domain metrics, on the service's registry (no label names an operation).

Every way an operation can end (each stop reason, and `failed`) is listed at zero from the
start, so a dashboard reads 0 finished rather than "No data" before the first one ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass
from typing import get_args

from prometheus_client import CollectorRegistry, Counter, Gauge

from discospace.events import OperationCompleted, OperationFailed, SamplesRequested
from discospace.events.operations import StopReason
from discospace.explorer.domain.operation import Published

ENDINGS = (*get_args(StopReason), "failed")
"""The `stop_reason` of a finished operation: why it completed, or `failed`."""


@dataclass(frozen=True)
class ExplorerMetrics:
    """Decisions by type, retries, operations running and how they ended, the partitions this
    replica owns, and decisions that lost to another replica's."""

    decisions: Counter
    retries: Counter
    operations_active: Gauge
    operations_finished: Counter
    replayed_events: Counter
    owned_partitions: Gauge
    conflicting_decisions: Counter
    rebuilt_operations: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ExplorerMetrics:
        operations_finished = Counter(
            "discospace_operations_finished",
            "Operations that ended, by stop reason ('failed' when they failed).",
            ["stop_reason"],
            registry=registry,
        )
        for ending in ENDINGS:
            operations_finished.labels(stop_reason=ending)
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
                "Operations requested and not finished that this explorer decides for (summed "
                "over the replicas, each operation counts once).",
                registry=registry,
            ),
            operations_finished=operations_finished,
            replayed_events=Counter(
                "discospace_explorer_replayed_events",
                "Events folded while replaying the topics at start.",
                registry=registry,
            ),
            owned_partitions=Gauge(
                "discospace_explorer_owned_partitions",
                "1 for each partition of the operations topic this replica decides for, 0 for "
                "the others (the sum is how many it owns).",
                ["partition"],
                registry=registry,
            ),
            conflicting_decisions=Counter(
                "discospace_explorer_conflicting_decisions",
                "Decisions read from the log that another decision for the same operation and "
                "slot preceded (two replicas decided): the first in the log is kept.",
                ["event_type"],
                registry=registry,
            ),
            rebuilt_operations=Counter(
                "discospace_explorer_rebuilt_operations",
                "Operations rebuilt from the log because a decision of this replica lost to "
                "another replica's.",
                registry=registry,
            ),
        )

    def published(self, decisions: Iterable[Published]) -> None:
        for decision in decisions:
            self.decisions.labels(event_type=decision.type).inc()
            if isinstance(decision, SamplesRequested) and decision.attempt > 1:
                self.retries.inc()
            if isinstance(decision, OperationCompleted):
                self.operations_finished.labels(stop_reason=decision.stop_reason).inc()
            if isinstance(decision, OperationFailed):
                self.operations_finished.labels(stop_reason="failed").inc()

    def show_owned(self, owned: Set[int], partitions: int) -> None:
        """Set the owned-partitions gauge: 1 for `owned`, 0 for the other partitions known."""
        known = {int(labels["partition"]) for labels in _label_sets(self.owned_partitions)}
        for partition in known | set(range(partitions)) | set(owned):
            owns = 1.0 if partition in owned else 0.0
            self.owned_partitions.labels(partition=str(partition)).set(owns)


def _label_sets(gauge: Gauge) -> list[dict[str, str]]:
    return [sample.labels for metric in gauge.collect() for sample in metric.samples]
