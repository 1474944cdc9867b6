"""What an actuator worker counts, on the service's registry (labels: bounded sets only)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

OUTCOMES = ("valid", "invalid", "transient", "crashed", "timeout", "cancelled", "error")
"""How a call of the plugin can end: its own result (valid, invalid, transient), its child
process dying (crashed), the worker's timeout, its operation ending (cancelled), or an error."""


@dataclass(frozen=True)
class WorkerMetrics:
    """The worker's series: plugin calls by outcome, time per call, what runs, what is refused
    and what is skipped."""

    registry: CollectorRegistry
    calls: Counter
    in_flight: Gauge
    duration: Histogram
    refused: Counter
    skipped: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> WorkerMetrics:
        registry = registry or CollectorRegistry()
        return cls(
            registry=registry,
            calls=Counter(
                "discospace_actuator_calls",
                f"Calls of the actuator plugin, by actuator and outcome ({', '.join(OUTCOMES)}).",
                ["actuator", "outcome"],
                registry=registry,
            ),
            in_flight=Gauge(
                "discospace_measurements_in_flight",
                "Measurements this worker is running now.",
                registry=registry,
            ),
            duration=Histogram(
                "discospace_measurement_duration_seconds",
                "How long the actuator plugin took per measurement.",
                ["actuator"],
                buckets=(0.001, 0.01, 0.1, 1, 10, 60, 300, 1800, 7200),
                registry=registry,
            ),
            refused=Counter(
                "discospace_measurement_requests_refused",
                "Requests for an experiment this worker does not offer.",
                registry=registry,
            ),
            skipped=Counter(
                "discospace_measurement_requests_skipped",
                "Requests of an operation that had ended, answered without measuring.",
                registry=registry,
            ),
        )

    def calls_with(self, actuator: str, outcome: str) -> float:
        """How many calls ended with `outcome` so far (for tests and benchmarks)."""
        labels = {"actuator": actuator, "outcome": outcome}
        return self.registry.get_sample_value("discospace_actuator_calls_total", labels) or 0.0

    def value(self, name: str) -> float:
        """The current value of an unlabelled series (for tests and benchmarks)."""
        return self.registry.get_sample_value(name) or 0.0
