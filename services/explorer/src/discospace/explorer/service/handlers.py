"""The explorer's handlers: module-level functions over the parts `bootstrap` builds.

Every handler takes the event and `ExplorerDeps`; the runtime's `bind` hands the consumer a
version that takes the event alone. So a handler runs in a test with hand-built parts, no app,
no broker.

- `fold_history` (start-up, before the broker consumes): the spaces, operations and
  measurements topics, every partition, are folded up to where they end now, deciding nothing
  (`LiveExplorer.fold`), by the runtime's one start-up fold; the consumer then reads on from
  exactly there, and the read positions start there (`Ownership` waits on them).
- `on_space_registered`, `on_space_rejected`, `on_operation_event`, `on_measurement_event`:
  every event read live is folded by the `LiveExplorer`, which decides for the operations this
  replica owns (a rejection answers a space a pipeline submitted).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from discospace.events import SpaceRegistered, SpaceRejected
from discospace.explorer.domain.operation import MeasurementInput, OperationInput
from discospace.explorer.service.live import LiveExplorer
from discospace.explorer.service.ownership import Ownership
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime.consuming import Consumer
from discospace.runtime.folding import fold_then_follow
from discospace.runtime.positions import ReadPositions

logger = logging.getLogger("discospace.explorer")


@dataclass(frozen=True)
class ExplorerDeps:
    """The explorer's parts: the live explorer (state, decisions, timer), the group membership
    that moves its ownership, and how far its consumer has read each partition."""

    settings: ExplorerSettings
    explorer: LiveExplorer
    ownership: Ownership
    positions: ReadPositions


async def fold_history(consumer: Consumer, deps: ExplorerDeps) -> None:
    """Fold what `consumer`'s topics hold now, deciding nothing; it reads on from there."""
    report = await fold_then_follow(
        deps.settings.kafka_bootstrap_servers,
        consumer,
        fold=deps.explorer.fold,
        client_id="discospace-explorer-fold",
    )
    for (topic, partition), end in report.ends.items():
        deps.positions.saw(topic, partition, end - 1)
    logger.info("%s", report)


async def on_space_registered(event: SpaceRegistered, deps: ExplorerDeps) -> None:
    await deps.explorer.handle(event)


async def on_space_rejected(event: SpaceRejected, deps: ExplorerDeps) -> None:
    await deps.explorer.handle(event)


async def on_operation_event(event: OperationInput, deps: ExplorerDeps) -> None:
    await deps.explorer.handle(event)


async def on_measurement_event(event: MeasurementInput, deps: ExplorerDeps) -> None:
    await deps.explorer.handle(event)
