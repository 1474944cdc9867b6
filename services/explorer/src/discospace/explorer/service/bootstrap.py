"""The explorer's composition root: its parts, built once per process from settings.

`bootstrap` builds what the handlers (`handlers.py`) work with: the publishers of decisions
(operation events on the operations topic; the spaces a pipeline derives on the
space-submissions topic, for the registry), the engine over the operator registry, the
domain metrics, the read positions (told of every message done with), the log reader for
rebuilding one operation, the `LiveExplorer` and the group membership (`Ownership`).
`discospace.explorer.app` only wires them.
"""

from __future__ import annotations

from discospace.events import (
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    OperationStarted,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
    SamplesRequested,
    SpaceSubmitted,
)
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.operation import Published
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.service.handlers import ExplorerDeps
from discospace.explorer.service.live import LiveExplorer, Publish
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
        PipelineJobStarted,
        PipelineJobCompleted,
        PipelineJobFailed,
        OperationRequested,
        OperationCancelRequested,
        description="The explorer's decisions about each operation; a pipeline's jobs, and "
        "the requests and cancellations of its child operations.",
    )
    to_space_submissions = service.publisher(
        service.topics.space_submissions,
        SpaceSubmitted,
        description="Spaces a pipeline derives (a refined space, a measure job's, a trial's), "
        "submitted to the registry.",
    )
    publish = routed(to_operations, to_space_submissions)
    engine = Engine(operators, settings.timing, settings.max_message_bytes)
    metrics = ExplorerMetrics.create(service.metrics.registry)
    positions = ReadPositions()
    service.done_with.append(positions.saw)  # handled, set aside, or folded already
    service.passed_over.append(positions.saw)  # what a consumer passes over is read too
    history = LogHistory(settings.kafka_bootstrap_servers, service.topics, positions)
    explorer = LiveExplorer(
        engine, publish, service.clock, metrics, settings.publish_retry_s, history
    )
    ownership = Ownership(settings, explorer, positions, metrics)
    return ExplorerDeps(settings, explorer, ownership, positions)


def routed(to_operations: Publish, to_space_submissions: Publish) -> Publish:
    """Publishes a submission to the registry's topic, every other decision to operations."""

    async def publish(event: Published) -> None:
        if isinstance(event, SpaceSubmitted):
            await to_space_submissions(event)
        else:
            await to_operations(event)

    return publish
