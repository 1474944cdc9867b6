"""The registry's composition root: its parts, built once per process on the service.

`bootstrap(service)` builds what the handlers (`handlers.py`) work with: the folded state
(also `service.state`, for views and tests), the domain metrics on the service's registry and
the publisher of answers on the spaces topic. `app.py` only wires handlers to consumers.
"""

from __future__ import annotations

from discospace.events import SpaceRegistered, SpaceRejected
from discospace.registry.domain import RegistryState
from discospace.registry.handlers import RegistryDeps
from discospace.registry.metrics import RegistryMetrics
from discospace.runtime import Service


def bootstrap(service: Service) -> RegistryDeps:
    """The registry's parts, on `service`'s broker, clock and metrics registry."""
    to_spaces = service.publisher(
        service.topics.spaces,
        SpaceRegistered,
        SpaceRejected,
        description="Registered or rejected spaces.",
    )
    state = service.state = RegistryState()
    metrics = RegistryMetrics.create(service.metrics.registry)
    limit = service.settings.max_message_bytes
    return RegistryDeps(state, metrics, to_spaces, service.clock, limit)
