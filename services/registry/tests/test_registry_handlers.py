"""The registry's handlers called on their own, with hand-built parts: no app, no broker."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from discospace.events import Event, SpaceRegistered, SpaceRejected
from discospace.registry.domain import RegistryState
from discospace.registry.handlers import (
    RegistryDeps,
    on_actuator_registered,
    on_space_registered,
    on_space_submitted,
)
from discospace.registry.metrics import RegistryMetrics


@dataclass
class Parts:
    """Hand-built parts: answers land in a list, metrics in a registry of their own."""

    clock: object
    published: list[Event] = field(default_factory=list)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        metrics = RegistryMetrics.create(self.registry)
        self.deps = RegistryDeps(RegistryState(), metrics, self.to_spaces, self.clock)

    async def to_spaces(self, event: SpaceRegistered | SpaceRejected) -> None:
        self.published.append(event)

    def sample(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


async def test_a_submission_is_answered_against_the_catalog_the_handlers_folded(
    clock, make_catalog, make_submission
):
    parts = Parts(clock)

    await on_actuator_registered(make_catalog(), parts.deps)
    await on_space_submitted(make_submission(), parts.deps)

    [answer] = parts.published
    assert isinstance(answer, SpaceRegistered)
    assert parts.deps.state.is_registered(answer.space_id)
    assert parts.sample("discospace_catalog_experiments") == 1
    assert parts.sample("discospace_space_submissions_total", outcome="registered") == 1


async def test_a_registration_read_back_answers_a_later_submission_of_the_same_space(
    clock, make_catalog, make_submission
):
    registering = Parts(clock)
    await on_actuator_registered(make_catalog(), registering.deps)
    await on_space_submitted(make_submission(sid="sub-1"), registering.deps)
    [registration] = registering.published
    parts = Parts(clock)

    await on_space_registered(registration, parts.deps)
    await on_space_submitted(make_submission(sid="sub-2"), parts.deps)

    assert parts.published == [registration]
    assert parts.sample("discospace_space_submissions_total", outcome="already_registered") == 1
