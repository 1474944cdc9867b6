"""Events for tests and benchmarks that need results in a sample store without running a loop."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from discospace.core import Entity
from discospace.events import MeasurementCompleted, OperationRequested, measurement_request_id


def measured(
    values: Mapping[str, Any],
    occurred_at: datetime,
    index: int,
    *,
    operation: str,
    experiment_id: str,
    sample_store: str,
    results: Mapping[str, float],
    space_id: str = "elsewhere",
) -> MeasurementCompleted:
    """A valid result of `operation` for the entity of `values`, in `sample_store`: the
    `index`-th of its operation (its event id derives from the operation and `index`)."""
    cause = OperationRequested(
        event_id=f"request-{operation}",
        occurred_at=occurred_at,
        operation_id=operation,
        space_id=space_id,
        operator="random_walk",
        requested_by="tester",
    )
    entity = Entity.of(dict(values))
    return MeasurementCompleted.caused_by(
        cause,
        occurred_at,
        index,
        operation_id=operation,
        request_id=measurement_request_id(operation, entity.id, experiment_id),
        space_id=space_id,
        sample_store=sample_store,
        entity_id=entity.id,
        entity_values=dict(values),
        experiment_id=experiment_id,
        worker_id="w0",
        values=dict(results),
        is_valid=True,
        uncertainty={},
        duration_seconds=1.0,
    )
