"""The registry's handlers: module-level functions of the event and the registry's parts.

Each takes the event and `RegistryDeps` (built by `bootstrap.py`); the app subscribes them
bound to the parts (`discospace.runtime.bind`), so a test runs one with hand-built parts, no
app and no broker.

- `on_actuator_registered`, `on_space_registered`: fold catalogs and registrations; the
  registry's followers hand them every event of their topics once, up to where the topics
  ended at start, then live (`Service.follow`);
- `on_space_submitted`: answers a submission on the spaces topic (`SpaceRegistered` or
  `SpaceRejected`, see `domain.decide_submission`). A space the catalog cannot measure is
  rejected only once the catalogs follower has read the actuators topic to its end: a worker
  that announced its catalog just before the submission was sent is heard first.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from discospace.events import (
    MAX_MESSAGE_BYTES,
    ActuatorRegistered,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
)
from discospace.events.factory import Clock
from discospace.registry.domain import RegistryState, SpaceAnswer, decide_submission, evolve
from discospace.registry.metrics import RegistryMetrics
from discospace.runtime import TransientError

logger = logging.getLogger("discospace.registry")


async def _caught_up() -> int | None:
    return 0


@dataclass(frozen=True)
class RegistryDeps:
    """What the registry's handlers work with."""

    state: RegistryState
    metrics: RegistryMetrics
    to_spaces: Callable[[SpaceAnswer], Awaitable[None]]
    clock: Clock
    max_message_bytes: int = MAX_MESSAGE_BYTES
    """The largest answer the registry can publish: a space whose registration would be
    larger is rejected."""
    catalogs_behind: Callable[[], Awaitable[int | None]] = _caught_up
    """How many records of the actuators topic its follower has still to read (None: it
    cannot say)."""


async def on_actuator_registered(event: ActuatorRegistered, deps: RegistryDeps) -> None:
    _fold(event, deps)


async def on_space_registered(event: SpaceRegistered, deps: RegistryDeps) -> None:
    _fold(event, deps)


async def on_space_submitted(event: SpaceSubmitted, deps: RegistryDeps) -> None:
    answer = decide_submission(deps.state, event, deps.clock(), deps.max_message_bytes)
    if isinstance(answer, SpaceRejected) and answer.space_id is not None:
        behind = await deps.catalogs_behind()
        if behind != 0:  # a catalog announced before the submission may be among them
            unread = "an unknown number of" if behind is None else str(behind)
            raise TransientError(
                f"submission {event.submission_id} is judged once the catalogs are read: "
                f"{unread} records of the actuators topic are still to be read"
            )
    await deps.to_spaces(answer)
    deps.metrics.answered(answer, event)
    deps.metrics.observe(deps.state)


def _fold(event: ActuatorRegistered | SpaceRegistered, deps: RegistryDeps) -> None:
    for problem in evolve(deps.state, event):
        logger.warning("catalog entry left out: %s", problem)
    deps.metrics.observe(deps.state)
