"""The registry's wiring: catalogs and registrations folded, submissions answered on `spaces`.

At start the registry folds the actuators and spaces topics up to where they end, once, before
the broker consumes (`Service.follow`), so no submission is judged on a partial catalog; its
followers then read on from exactly there. Submissions are consumed in the registry's group.
Handlers: `handlers.py`; their parts: `bootstrap.py`.
"""

from __future__ import annotations

from discospace.events.factory import Clock, utc_now
from discospace.registry.bootstrap import bootstrap
from discospace.registry.handlers import (
    on_actuator_registered,
    on_space_registered,
    on_space_submitted,
)
from discospace.registry.settings import RegistrySettings
from discospace.runtime import Service, bind, create_service

DESCRIPTION = (
    "Owns discovery space definitions and the experiment catalog: validates each submitted "
    "space against the catalogs actuators announce and registers or rejects it."
)


def create_app(settings: RegistrySettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The registry service, ready to run."""
    service = create_service(settings or RegistrySettings(), description=DESCRIPTION, clock=clock)
    topics = service.topics
    catalogs = service.follow(topics.actuators, description="Experiment catalogs.")
    deps = bootstrap(service, catalogs_behind=catalogs.behind)
    catalogs(bind(on_actuator_registered, deps))
    registrations = service.follow(topics.spaces, description="Registrations, to remember them.")
    registrations(bind(on_space_registered, deps))
    submissions = service.consumer(
        topics.space_submissions, description="Spaces submitted for registration."
    )
    submissions(bind(on_space_submitted, deps))
    return service
