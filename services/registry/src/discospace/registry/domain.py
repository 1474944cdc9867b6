"""The registry's decisions, pure: fold actuator catalogs, answer a submitted space.

No Kafka, clock or randomness here: the time of the answer comes in as an argument.
"""

from __future__ import annotations

import logging
from datetime import datetime

from discospace.core import DiscospaceError, DiscoverySpace, ExperimentCatalog, ExperimentSpec
from discospace.events import ActuatorRegistered, SpaceRegistered, SpaceRejected, SpaceSubmitted

logger = logging.getLogger("discospace.registry.domain")


class RegistryState:
    """What the registry knows: every experiment the actuators announced."""

    def __init__(self) -> None:
        self.catalog = ExperimentCatalog()

    def __len__(self) -> int:
        return len(self.catalog)


def evolve_catalog(state: RegistryState, event: ActuatorRegistered) -> list[str]:
    """Add the announced experiments to the catalog; return why any was left out."""
    problems = []
    for spec in event.experiments:
        try:
            state.catalog.add(spec)
        except DiscospaceError as error:
            problems.append(f"{spec.actuator}/{spec.experiment}: {error}")
    return problems


def decide_submission(
    state: RegistryState, event: SpaceSubmitted, occurred_at: datetime
) -> SpaceRegistered | SpaceRejected:
    """Register the submitted space when it is well formed and the catalog can measure it."""
    try:
        space = DiscoverySpace.from_spec(event.spec)
    except DiscospaceError as error:
        return _rejected(event, occurred_at, str(error), space_id=None)
    problems = space.problems(state.catalog)
    if problems:
        return _rejected(event, occurred_at, "; ".join(problems), space_id=space.id)
    return SpaceRegistered.caused_by(
        event,
        occurred_at,
        submission_id=event.submission_id,
        space_id=space.id,
        spec=space.to_spec(),
        experiments=_experiment_specs(state, space),
    )


def _experiment_specs(state: RegistryState, space: DiscoverySpace) -> tuple[ExperimentSpec, ...]:
    found = (state.catalog.get(ref.actuator, ref.experiment) for ref in space.experiments)
    return tuple(experiment.to_spec() for experiment in found if experiment is not None)


def _rejected(
    event: SpaceSubmitted, occurred_at: datetime, reason: str, space_id: str | None
) -> SpaceRejected:
    return SpaceRejected.caused_by(
        event, occurred_at, submission_id=event.submission_id, space_id=space_id, reason=reason
    )
