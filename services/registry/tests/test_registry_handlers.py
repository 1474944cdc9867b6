"""The registry's handlers called on their own, with hand-built parts: no app, no broker."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
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
from discospace.runtime import TransientError


@dataclass
class Parts:
    """Hand-built parts: answers land in a list, metrics in a registry of their own."""

    clock: object
    published: list[Event] = field(default_factory=list)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    unread: list[int | None] = field(default_factory=lambda: [0])
    """What the catalogs follower says is left to read, the last value for good."""

    def __post_init__(self) -> None:
        metrics = RegistryMetrics.create(self.registry)
        self.deps = RegistryDeps(
            RegistryState(), metrics, self.to_spaces, self.clock, catalogs_behind=self.behind
        )

    async def behind(self) -> int | None:
        return self.unread.pop(0) if len(self.unread) > 1 else self.unread[0]

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


@pytest.mark.parametrize("unread", [3, None])
async def test_a_submission_waits_for_a_catalog_the_follower_has_not_read_yet(
    clock, make_catalog, make_submission, unread
):
    """The worker announced its catalog, then the user submitted: two topics, two consumers,
    and the submission may be read first. It is not rejected while the catalogs follower is
    behind (or cannot say): it is tried again, and registered once the catalog is read."""
    parts = Parts(clock, unread=[unread])

    with pytest.raises(TransientError, match="actuators topic"):
        await on_space_submitted(make_submission(), parts.deps)
    assert parts.published == []

    await on_actuator_registered(make_catalog(), parts.deps)
    parts.unread = [0]
    await on_space_submitted(make_submission(), parts.deps)

    [answer] = parts.published
    assert isinstance(answer, SpaceRegistered)


async def test_a_submission_is_rejected_once_the_catalogs_are_read_to_their_end(
    clock, make_catalog, make_submission
):
    parts = Parts(clock, unread=[0])
    await on_actuator_registered(make_catalog(), parts.deps)

    await on_space_submitted(make_submission(experiment="no-such-experiment"), parts.deps)

    [answer] = parts.published
    assert isinstance(answer, SpaceRejected)
    assert "no-such-experiment" in answer.reason


async def test_a_malformed_submission_is_rejected_without_waiting_for_the_catalogs(
    clock, make_submission
):
    """Nothing a catalog could say makes a malformed space measurable."""
    parts = Parts(clock, unread=[None])
    malformed = make_submission().model_copy(
        update={"spec": make_submission().spec.model_copy(update={"entity_space": ()})}
    )

    await on_space_submitted(malformed, parts.deps)

    [answer] = parts.published
    assert isinstance(answer, SpaceRejected)
