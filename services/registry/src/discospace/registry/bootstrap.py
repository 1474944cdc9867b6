"""The registry's composition root: its parts, built once per process on the service.

`bootstrap(service, catalogs_behind)` builds what the handlers (`handlers.py`) work with: the
folded state (also `service.state`, for views and tests), the domain metrics on the service's
registry, the publisher of answers on the spaces topic and how far behind the catalogs follower
is. `app.py` only wires handlers to consumers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from discospace.events import SpaceRegistered, SpaceRejected
from discospace.registry.domain import RegistryState
from discospace.registry.handlers import RegistryDeps
from discospace.registry.metrics import RegistryMetrics
from discospace.runtime import Service


def bootstrap(
    service: Service, catalogs_behind: Callable[[], Awaitable[int | None]]
) -> RegistryDeps:
    """The registry's parts, on `service`'s broker, clock and metrics registry;
    `catalogs_behind` tells how much of the actuators topic is still to be read (its
    follower's)."""
    to_spaces = service.publisher(
        service.topics.spaces,
        SpaceRegistered,
        SpaceRejected,
        description="Registered or rejected spaces.",
    )
    state = service.state = RegistryState()
    metrics = RegistryMetrics.create(service.metrics.registry)
    limit = service.settings.max_message_bytes
    return RegistryDeps(state, metrics, to_spaces, service.clock, limit, catalogs_behind)
