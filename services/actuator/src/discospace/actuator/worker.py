"""Measuring one request with the actuator plugin: the events to publish, as they happen.

`Worker.handle(request)` yields `MeasurementStarted` before the plugin runs and the result
after it, so the app publishes each as soon as it exists and commits the request's offset only
after the result is out. A worker that stops mid-measurement (cancelled) yields no result: the
request stays uncommitted and another worker of the pool measures it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from discospace.actuator.domain import Result, failed, result_of, started, task_of
from discospace.actuator.plugin import Actuator, MeasurementTask, Outcome
from discospace.core import ExperimentCatalog
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.events import MeasurementRequested, MeasurementStarted
from discospace.events.factory import Clock

logger = logging.getLogger("discospace.actuator.worker")


@dataclass(frozen=True)
class WorkerMetrics:
    """What the worker counts, on the service's registry (labels: bounded sets only)."""

    registry: CollectorRegistry
    calls: Counter
    in_flight: Gauge
    duration: Histogram
    refused: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> WorkerMetrics:
        registry = registry or CollectorRegistry()
        return cls(
            registry=registry,
            calls=Counter(
                "discospace_actuator_calls",
                "Calls of the actuator plugin, by actuator and outcome "
                "(valid, invalid, transient, error).",
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
        )

    def calls_with(self, actuator: str, outcome: str) -> float:
        """How many calls ended with `outcome` so far (for tests and benchmarks)."""
        labels = {"actuator": actuator, "outcome": outcome}
        return self.registry.get_sample_value("discospace_actuator_calls_total", labels) or 0.0


OUTCOMES = ("valid", "invalid", "transient", "error")


def outcome_label(outcome: Outcome) -> str:
    if isinstance(outcome, ValidMeasurement):
        return "valid"
    return "invalid" if isinstance(outcome, InvalidMeasurement) else "transient"


class Worker:
    """Runs requests through one actuator plugin and says what happened, as events."""

    def __init__(
        self,
        actuator: Actuator,
        worker_id: str,
        clock: Clock,
        metrics: WorkerMetrics | None = None,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.actuator = actuator
        self.worker_id = worker_id
        self.clock = clock
        self.metrics = metrics or WorkerMetrics.create()
        self.catalog = ExperimentCatalog(actuator.catalog())
        self._timer = timer
        for label in OUTCOMES:  # every series listed from the start, at zero
            self.metrics.calls.labels(actuator=actuator.name, outcome=label)
        self.metrics.duration.labels(actuator=actuator.name)

    async def handle(
        self, request: MeasurementRequested
    ) -> AsyncIterator[MeasurementStarted | Result]:
        """`MeasurementStarted`, then the result; or only a failure when it cannot run."""
        task = task_of(request, self.catalog)
        if isinstance(task, str):
            self.metrics.refused.inc()
            yield failed(request, self.worker_id, self.clock(), task, retryable=False)
            return
        yield started(request, self.worker_id, self.clock())
        outcome, elapsed = await self._measure(task)
        if isinstance(outcome, str):
            yield failed(request, self.worker_id, self.clock(), outcome, retryable=False)
            return
        yield result_of(request, outcome, self.worker_id, self.clock(), elapsed)

    async def _measure(self, task: MeasurementTask) -> tuple[Outcome | str, float]:
        """The plugin's outcome (or the sentence of the error it raised), and how long it took."""
        name = self.actuator.name
        self.metrics.in_flight.inc()
        begun = self._timer()
        try:
            outcome: Outcome | str = await self.actuator.measure(task)
            label = outcome_label(outcome)
        except Exception as error:
            logger.exception("actuator %s failed on request %s", name, task.request_id)
            outcome, label = f"actuator '{name}' raised {type(error).__name__}: {error}", "error"
        finally:
            self.metrics.in_flight.dec()
        elapsed = self._timer() - begun
        self.metrics.duration.labels(actuator=name).observe(elapsed)
        self.metrics.calls.labels(actuator=name, outcome=label).inc()
        return outcome, elapsed
