"""What an actuator worker counts, on the service's registry (labels: bounded sets only).

`discospace_measurements_total{pool, outcome}` is the worker's plugin calls summed over its
actuators and labelled with its pool, so a dashboard shows the measurements of every pool by
outcome; like the calls, every outcome is listed at zero from the start.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

OUTCOMES = ("valid", "invalid", "transient", "crashed", "timeout", "cancelled", "error")
"""How a call of the plugin can end: its own result (valid, invalid, transient), its child
process dying (crashed), the worker's timeout, its operation ending (cancelled), or an error."""


@dataclass(frozen=True)
class WorkerMetrics:
    """The worker's series: plugin calls by outcome, time per call, what runs, what is refused,
    what is skipped and what is answered again."""

    registry: CollectorRegistry
    calls: Counter
    in_flight: Gauge
    duration: Histogram
    refused: Counter
    skipped: Counter
    answered_again: Counter

    @classmethod
    def create(
        cls, registry: CollectorRegistry | None = None, pool: str | None = None
    ) -> WorkerMetrics:
        """The series on `registry`; with `pool`, also the measurements of that pool."""
        registry = registry or CollectorRegistry()
        calls = Counter(
            "discospace_actuator_calls",
            f"Calls of the actuator plugin, by actuator and outcome ({', '.join(OUTCOMES)}).",
            ["actuator", "outcome"],
            registry=registry,
        )
        if pool is not None:
            registry.register(MeasurementsOfPool(calls, pool))
        return cls(
            registry=registry,
            calls=calls,
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
            answered_again=Counter(
                "discospace_measurement_requests_answered_again",
                "Requests delivered again to the worker that had answered them (or was "
                "measuring them), answered with the same events without measuring again.",
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


class MeasurementsOfPool(Collector):
    """`discospace_measurements_total{pool, outcome}`: the calls by outcome, over actuators."""

    def __init__(self, calls: Counter, pool: str) -> None:
        self.calls = calls
        self.pool = pool

    def collect(self) -> Iterator[CounterMetricFamily]:
        by_outcome = dict.fromkeys(OUTCOMES, 0.0)
        for metric in self.calls.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    outcome = sample.labels["outcome"]
                    by_outcome[outcome] = by_outcome.get(outcome, 0.0) + sample.value
        family = CounterMetricFamily(
            "discospace_measurements",
            "Measurements this worker ran, by its pool and how they ended (its plugin calls).",
            labels=["pool", "outcome"],
        )
        for outcome, count in by_outcome.items():
            family.add_metric([self.pool, outcome], count)
        yield family
