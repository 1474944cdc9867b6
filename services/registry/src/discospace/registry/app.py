"""The registry's wiring: catalogs in from the actuators topic, spaces answered on `spaces`."""

from __future__ import annotations

import logging

from discospace.events import ActuatorRegistered, SpaceRegistered, SpaceRejected, SpaceSubmitted
from discospace.events.factory import Clock, utc_now
from discospace.registry.domain import RegistryState, decide_submission, evolve_catalog
from discospace.registry.settings import RegistrySettings
from discospace.runtime import Service, create_service

DESCRIPTION = (
    "Owns discovery space definitions and the experiment catalog: validates each submitted "
    "space against the catalogs actuators announce and registers or rejects it."
)

logger = logging.getLogger("discospace.registry")


def create_app(settings: RegistrySettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The registry service, ready to run."""
    service = create_service(settings or RegistrySettings(), description=DESCRIPTION, clock=clock)
    state = service.state = RegistryState()
    topics = service.topics
    to_spaces = service.publisher(
        topics.spaces, SpaceRegistered, SpaceRejected, description="Registered or rejected spaces."
    )

    @service.consumer(topics.actuators, replay=True, description="Experiment catalogs.")
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        for problem in evolve_catalog(state, event):
            logger.warning("catalog entry left out: %s", problem)

    @service.consumer(topics.space_submissions, description="Spaces submitted for registration.")
    async def on_space_submitted(event: SpaceSubmitted) -> None:
        await to_spaces(decide_submission(state, event, service.clock()))

    return service
