"""Every service lists the label sets it knows in advance at zero from its start, so a
dashboard reads 0 rather than "No data" until the first event of each kind."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from discospace.actuator.app import create_app as actuator_app
from discospace.actuator.metrics import OUTCOMES
from discospace.events import TopicNames, all_event_types
from discospace.explorer.app import create_app as explorer_app
from discospace.explorer.service.metrics import ENDINGS
from discospace.projector.app import create_app as projector_app
from discospace.registry.app import create_app as registry_app
from discospace.runtime import Service
from discospace.runtime.metrics import DEAD_LETTER_REASON_KINDS
from discospace.sampler.app import create_app as sampler_app

STALLED = "discospace_consumer_stalled"

APPS: dict[str, Callable[[], Service]] = {
    "registry": registry_app,
    "explorer": explorer_app,
    "sampler": sampler_app,
    "actuator": actuator_app,
    "projector": projector_app,
}


@pytest.fixture(autouse=True)
def _fresh_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCOSPACE_TOPIC_PREFIX", TopicNames.unique("zeros").prefix)


def _zeros(
    service: Service, metric: str, label: str, values: tuple[str, ...]
) -> dict[str, float | None]:
    """The value of `metric` for each of `values` of `label` (None: not listed)."""
    registry = service.metrics.registry
    return {value: registry.get_sample_value(metric, {label: value}) for value in values}


@pytest.mark.parametrize("name", APPS)
def test_every_reason_to_dead_letter_is_listed_at_zero(name: str) -> None:
    service = APPS[name]()

    zeros = _zeros(
        service, "discospace_dead_lettered_total", "reason_kind", DEAD_LETTER_REASON_KINDS
    )

    assert zeros == dict.fromkeys(DEAD_LETTER_REASON_KINDS, 0.0)


def test_every_way_an_operation_ends_is_listed_at_zero() -> None:
    zeros = _zeros(explorer_app(), "discospace_operations_finished_total", "stop_reason", ENDINGS)

    assert zeros == dict.fromkeys(ENDINGS, 0.0)
    assert {"max_measurements", "cancelled", "failed"} <= set(ENDINGS)


def test_every_outcome_of_the_workers_pool_is_listed_at_zero(monkeypatch) -> None:
    monkeypatch.setenv("DISCOSPACE_ACTUATOR_POOL", "a100")
    registry = actuator_app().metrics.registry

    counts = {
        outcome: registry.get_sample_value(
            "discospace_measurements_total", {"pool": "a100", "outcome": outcome}
        )
        for outcome in OUTCOMES
    }

    assert counts == dict.fromkeys(OUTCOMES, 0.0)


def test_every_event_type_the_projector_writes_is_listed_at_zero() -> None:
    names = tuple(event_type.type_name() for event_type in all_event_types())

    zeros = _zeros(projector_app(), "discospace_projected_events_total", "event_type", names)

    assert zeros == dict.fromkeys(names, 0.0)


@pytest.mark.parametrize("name", APPS)
def test_every_consumer_of_every_service_is_listed_not_stalled_from_the_start(name: str) -> None:
    service = APPS[name]()

    [family] = [m for m in service.metrics.registry.collect() if m.name == STALLED]
    stalled = {(s.labels["group"], s.labels["topic"]): s.value for s in family.samples}

    assert stalled, f"{name} lists no consumer in {STALLED}"
    assert set(stalled.values()) == {0.0}
    assert {topic for _, topic in stalled} >= _consumed_fixed_topics(service)


def _consumed_fixed_topics(service: Service) -> set[str]:
    """The fixed topics the service's subscribers read (a pattern's among the ones it uses)."""
    named = {
        topic
        for subscriber in service.broker.subscribers
        for topic in getattr(subscriber, "topic_names_for_subscribe", [])
    }
    pattern = [getattr(subscriber, "_pattern", None) for subscriber in service.broker.subscribers]
    matched = {
        topic
        for topic in service.topics_used
        for regex in pattern
        if isinstance(regex, str) and re.fullmatch(regex, topic)
    }
    return named | matched
