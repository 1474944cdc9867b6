"""The registry's wiring: catalogs and registrations folded, submissions answered on `spaces`.

At start it replays the actuators and spaces topics up to their current end (before the broker
starts consuming), so no submission is judged on a partial catalog; live consumers without a
group then keep both folds current. Submissions are consumed in the registry's group.
"""

from __future__ import annotations

import logging

from discospace.events import (
    ActuatorRegistered,
    Event,
    SpaceRegistered,
    SpaceRejected,
    SpaceSubmitted,
)
from discospace.events.factory import Clock, utc_now
from discospace.registry.domain import RegistryState, decide_submission, evolve
from discospace.registry.metrics import RegistryMetrics
from discospace.registry.settings import RegistrySettings
from discospace.runtime import Service, create_service
from discospace.runtime.replay import replay

DESCRIPTION = (
    "Owns discovery space definitions and the experiment catalog: validates each submitted "
    "space against the catalogs actuators announce and registers or rejects it."
)

logger = logging.getLogger("discospace.registry")


def create_app(settings: RegistrySettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The registry service, ready to run."""
    service = create_service(settings or RegistrySettings(), description=DESCRIPTION, clock=clock)
    state = service.state = RegistryState()
    metrics = RegistryMetrics.create(service.metrics.registry)
    topics = service.topics
    to_spaces = service.publisher(
        topics.spaces, SpaceRegistered, SpaceRejected, description="Registered or rejected spaces."
    )

    def fold(event: Event) -> None:
        if isinstance(event, ActuatorRegistered | SpaceRegistered):
            for problem in evolve(state, event):
                logger.warning("catalog entry left out: %s", problem)
            metrics.observe(state)

    @service.on_startup
    async def replay_catalogs_and_registrations() -> None:
        report = await replay(
            service.settings.kafka_bootstrap_servers,
            [topics.actuators, topics.spaces],
            fold,
            client_id="discospace-registry-replay",
        )
        logger.info(
            "replayed %d events: %d experiments, %d spaces",
            report.events,
            len(state),
            len(state.registrations),
        )

    @service.consumer(topics.actuators, replay=True, description="Experiment catalogs.")
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        fold(event)

    @service.consumer(topics.spaces, replay=True, description="Registrations, to remember them.")
    async def on_space_registered(event: SpaceRegistered) -> None:
        fold(event)

    @service.consumer(topics.space_submissions, description="Spaces submitted for registration.")
    async def on_space_submitted(event: SpaceSubmitted) -> None:
        answer = decide_submission(state, event, service.clock())
        await to_spaces(answer)
        metrics.answered(answer, event)
        metrics.observe(state)

    return service
