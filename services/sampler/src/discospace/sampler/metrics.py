"""The sampler's domain metrics, on the service's registry (labels: bounded sets only).

A pool's series are listed at zero as soon as the sampler learns the pool (`show_pool`), so the
memo hit ratio (memo hits over memo hits plus measurements requested) is right from the first
request, and a pool that measured nothing reads 0 rather than "No data".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from discospace.events import (
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    SamplesDrawn,
)
from discospace.sampler.answers import Answer


@dataclass(frozen=True)
class SamplerMetrics:
    """Entities drawn, memo hits, requests per pool, pairs no pool could take, memo size."""

    registry: CollectorRegistry
    requests_answered: Counter
    samples_drawn: Counter
    memo_hits: Counter
    measurements_requested: Counter
    unroutable: Counter
    memo_entries: Gauge
    conflicting_requests: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry, memo_size: Callable[[], int]) -> SamplerMetrics:
        memo_entries = Gauge(
            "discospace_memo_entries",
            "Measurements the sampler's memo holds (every sample store).",
            registry=registry,
        )
        memo_entries.set_function(memo_size)
        return cls(
            registry=registry,
            requests_answered=Counter(
                "discospace_sample_requests_answered",
                "SamplesRequested the sampler answered.",
                registry=registry,
            ),
            samples_drawn=Counter(
                "discospace_samples_drawn", "Entities drawn for operations.", registry=registry
            ),
            memo_hits=Counter(
                "discospace_memo_hits",
                "Entity-experiment pairs answered from the sample store (MeasurementReused).",
                registry=registry,
            ),
            measurements_requested=Counter(
                "discospace_measurements_requested",
                "MeasurementRequested sent, by pool.",
                ["pool"],
                registry=registry,
            ),
            unroutable=Counter(
                "discospace_measurements_unroutable",
                "Pairs no pool could take (answered with a retryable MeasurementFailed).",
                registry=registry,
            ),
            memo_entries=memo_entries,
            conflicting_requests=Counter(
                "discospace_sampler_conflicting_requests",
                "SamplesRequested read after another one for the same operation and request "
                "index that asks for something else (two explorer replicas decided): never "
                "answered.",
                registry=registry,
            ),
        )

    def show_pool(self, pool: str) -> None:
        """List `pool`'s series (at zero until something is sent there)."""
        self.measurements_requested.labels(pool=pool)

    def observe(self, answers: Iterable[Answer]) -> None:
        """Count what one answer to a request held."""
        self.requests_answered.inc()
        self.observe_pairs(answers)

    def observe_pairs(self, answers: Iterable[Answer]) -> None:
        """Count the answers of pairs (a request's, or deferred ones of waiting pairs)."""
        for event in answers:
            if isinstance(event, SamplesDrawn):
                self.samples_drawn.inc(len(event.entity_ids))
            elif isinstance(event, MeasurementReused):
                self.memo_hits.inc()
            elif isinstance(event, MeasurementRequested):
                self.measurements_requested.labels(pool=event.pool).inc()
            elif isinstance(event, MeasurementFailed):
                self.unroutable.inc()
