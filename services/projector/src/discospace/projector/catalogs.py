"""Actuators as the projector shows them (pure): the latest catalog per actuator and pool."""

from __future__ import annotations

import json
from collections.abc import Iterable

from discospace.core.spec import ExperimentSpec
from discospace.projector.models import ActuatorPool
from discospace.projector.queries import ActuatorRow


def actuator_pools(rows: Iterable[ActuatorRow]) -> list[ActuatorPool]:
    """One entry per (actuator, pool): the latest announcement's catalog, every worker seen."""
    by_pool: dict[tuple[str, str], list[ActuatorRow]] = {}
    for row in rows:
        by_pool.setdefault((row.actuator, row.pool), []).append(row)
    return [_pool(pool_rows) for _, pool_rows in sorted(by_pool.items())]


def _pool(rows: list[ActuatorRow]) -> ActuatorPool:
    latest = max(rows, key=lambda row: row.occurred_at)
    experiments = [ExperimentSpec.model_validate(item) for item in json.loads(latest.experiments)]
    return ActuatorPool(
        actuator=latest.actuator,
        pool=latest.pool,
        gpu_model=latest.gpu_model,
        experiments=experiments,
        workers=sorted({row.worker_id for row in rows}),
        registered_at=latest.occurred_at,
    )
