"""The explorer's wiring: operations and measurements in, decisions out on `operations`."""

from __future__ import annotations

from discospace.events import (
    OperationCompleted,
    OperationFailed,
    OperationStarted,
    SamplesRequested,
)
from discospace.events.factory import Clock, utc_now
from discospace.explorer.domain import ExplorerState, MeasurementInput, OperationInput, explore
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime import Service, create_service

DESCRIPTION = (
    "Owns operations: folds each operation's history (requests, decisions, measurements) and "
    "runs its operator to emit OperationStarted, SamplesRequested and OperationCompleted."
)


def create_app(settings: ExplorerSettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The explorer service, ready to run."""
    service = create_service(settings or ExplorerSettings(), description=DESCRIPTION, clock=clock)
    state = service.state = ExplorerState()
    topics = service.topics
    to_operations = service.publisher(
        topics.operations,
        OperationStarted,
        SamplesRequested,
        OperationCompleted,
        OperationFailed,
        description="The explorer's decisions about each operation.",
    )

    @service.consumer(topics.operations, description="Operation requests and their history.")
    async def on_operation_event(event: OperationInput) -> None:
        await to_operations.all(explore(state, event, service.clock()))

    @service.consumer(topics.measurements, description="What became of each measurement.")
    async def on_measurement_event(event: MeasurementInput) -> None:
        await to_operations.all(explore(state, event, service.clock()))

    return service
