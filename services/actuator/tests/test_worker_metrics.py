"""What a worker's /metrics shows a dashboard: its pool's measurements, by outcome.

(Every outcome listed at zero from the start: tests/test_metrics_listed_at_start.py.)
"""

from __future__ import annotations

from discospace.actuator.synthetic import SyntheticActuator, SyntheticParameters
from discospace.actuator.worker import Worker, WorkerMetrics


def _measurements(worker: Worker, outcome: str) -> float | None:
    labels = {"pool": "a100", "outcome": outcome}
    return worker.metrics.registry.get_sample_value("discospace_measurements_total", labels)


def _worker(clock) -> Worker:
    actuator = SyntheticActuator(SyntheticParameters(latency_s=0))
    return Worker(actuator, "w0", clock, WorkerMetrics.create(pool="a100"))


async def test_each_measurement_counts_once_for_its_pool_and_outcome(clock, make_request):
    worker = _worker(clock)
    fits = {"batch_size": 8, "model_max_length": 1024}
    too_big = make_request({"batch_size": 1024, "model_max_length": 8192})

    for request in (make_request(fits), too_big, make_request(fits, attempt=2)):
        [event async for event in worker.handle(request)]

    assert (_measurements(worker, "valid"), _measurements(worker, "invalid")) == (2, 1)
    assert worker.metrics.calls_with("synthetic", "valid") == 2
