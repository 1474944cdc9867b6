"""The explorer's wiring: spaces, operations and measurements in, decisions out on `operations`.

Every replica folds every event of the three topics, every partition, without a consumer
group: at start the runtime's start-up fold reads them up to their end offsets (folding only,
`handlers.fold_history`), then its consumer reads on from exactly there (`LiveExplorer.handle`);
how far it has read is tracked per partition (`ReadPositions`). It decides only for the
operations of the operations-topic partitions the group `<prefix>.explorer` gives it
(`Ownership`), once it has folded the topics up to where they ended when it was given them.
Handlers: `service/handlers.py`; their parts: `service/bootstrap.py`.
"""

from __future__ import annotations

from functools import partial

from discospace.events.factory import Clock, utc_now
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.operators.known import known_operators
from discospace.explorer.service.bootstrap import bootstrap
from discospace.explorer.service.handlers import (
    fold_history,
    on_measurement_event,
    on_operation_event,
    on_space_registered,
    on_space_rejected,
)
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime import Service, bind, create_service

DESCRIPTION = (
    "Owns operations: folds each operation's history (requests, decisions, measurements) and "
    "runs its operator to emit OperationStarted, SamplesRequested and OperationCompleted; "
    "runs pipelines (their jobs, child operations, and the spaces they submit)."
)
READ = (
    "Registered spaces, operation histories and what became of measurements, every partition, "
    "read by every replica."
)


def create_app(
    settings: ExplorerSettings | None = None,
    *,
    clock: Clock = utc_now,
    operators: OperatorRegistry | None = None,
) -> Service:
    """The explorer service, ready to run; `service.state` is its `LiveExplorer`."""
    settings = settings or ExplorerSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    deps = bootstrap(service, settings, operators or known_operators())
    service.state = deps.explorer
    topics = service.topics
    read = (topics.spaces, topics.operations, topics.measurements)
    consumer = service.consumer(*read, replay=True, deduplicate=False, description=READ)
    handlers = (on_space_registered, on_space_rejected, on_operation_event, on_measurement_event)
    for handler in handlers:
        consumer(bind(handler, deps))
    service.on_startup(partial(fold_history, consumer, deps))
    service.after_startup(deps.ownership.start)
    service.before_shutdown(deps.ownership.stop)
    service.on_shutdown(deps.explorer.stop)
    return service
