"""The explorer's composition root: its parts, built once per process from settings.

`bootstrap` builds what the handlers (`handlers.py`) work with: the publisher of decisions, the
engine over the operator registry, the domain metrics, the read positions (a broker
middleware), the log reader for rebuilding one operation, the `LiveExplorer` and the group
membership (`Ownership`). `discospace.explorer.app` only wires them.
"""

from __future__ import annotations

from discospace.events import (
    OperationCompleted,
    OperationFailed,
    OperationStarted,
    SamplesRequested,
)
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.service.handlers import ExplorerDeps
from discospace.explorer.service.live import LiveExplorer
from discospace.explorer.service.metrics import ExplorerMetrics
from discospace.explorer.service.ownership import LogHistory, Ownership
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime import Service
from discospace.runtime.positions import ReadPositions


def bootstrap(
    service: Service, settings: ExplorerSettings, operators: OperatorRegistry
) -> ExplorerDeps:
    """The explorer's parts, on `service`'s broker and metrics registry."""
    to_operations = service.publisher(
        service.topics.operations,
        OperationStarted,
        SamplesRequested,
        OperationCompleted,
        OperationFailed,
        description="The explorer's decisions about each operation.",
    )
    engine = Engine(operators, settings.timing)
    metrics = ExplorerMetrics.create(service.metrics.registry)
    positions = ReadPositions()
    service.broker.add_middleware(positions.middleware)
    history = LogHistory(settings.kafka_bootstrap_servers, service.topics, positions)
    explorer = LiveExplorer(
        engine, to_operations, service.clock, metrics, settings.publish_retry_s, history
    )
    ownership = Ownership(settings, explorer, positions, metrics)
    return ExplorerDeps(settings, explorer, ownership, positions)
