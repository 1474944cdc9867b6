"""Topic names, prefixes for tests, pool topics, and which event goes where with which key."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from discospace.events import TopicNames, decode, measure_topic
from discospace.events import topics as topics_module
from discospace.events.topics import InvalidTopicNameError, Topic, topics, validate_pool


def test_the_default_names_live_under_the_discospace_prefix() -> None:
    assert topics_module.SPACE_SUBMISSIONS == "discospace.space-submissions"
    assert topics_module.SPACES == "discospace.spaces"
    assert topics_module.ACTUATORS == "discospace.actuators"
    assert topics_module.OPERATIONS == "discospace.operations"
    assert topics_module.MEASUREMENTS == "discospace.measurements"
    assert topics_module.DEAD_LETTER == "discospace.dead-letter"
    assert measure_topic("a100-80gb") == "discospace.measure.a100-80gb"


def test_a_prefix_renames_every_topic() -> None:
    names = topics("ci-42.discospace")
    assert names.operations == "ci-42.discospace.operations"
    assert names.measure("h100") == "ci-42.discospace.measure.h100"
    assert all(name.startswith("ci-42.discospace.") for name in names.fixed())
    assert len(names.fixed()) == len(Topic) - 1


def test_unique_topic_names_never_collide_with_each_other_or_production() -> None:
    one, two = TopicNames.unique(), TopicNames.unique()
    assert one.prefix != two.prefix
    assert set(one.fixed()).isdisjoint(two.fixed())
    assert set(one.fixed()).isdisjoint(TopicNames().fixed())


def test_only_spaces_and_actuators_are_compacted() -> None:
    names = TopicNames.unique()
    compacted = [name for name in names.fixed() if names.is_compacted(name)]
    assert compacted == [names.spaces, names.actuators]


@pytest.mark.parametrize("pool", ["", "a100.80gb", "a100 80gb", "h100/x", "é"])
def test_a_pool_name_that_cannot_name_a_topic_is_refused_in_one_sentence(pool: str) -> None:
    with pytest.raises(InvalidTopicNameError, match=r"^Pool name .* must be letters"):
        measure_topic(pool)


def test_a_pool_name_too_long_for_its_topic_is_refused_in_one_sentence() -> None:
    names = TopicNames("discospace")
    longest = "p" * (249 - len("discospace.measure."))

    assert len(names.measure(longest)) == 249
    with pytest.raises(InvalidTopicNameError) as refused:
        names.measure(longest + "p")
    assert str(refused.value) == (
        f"Pool name '{longest}p' makes its topic 250 characters long; Kafka takes 249 at most."
    )


@pytest.mark.parametrize("prefix", ["", ".x", "x.", "a..b", "a b", "x" * 240])
def test_a_prefix_that_cannot_start_a_topic_name_is_refused(prefix: str) -> None:
    with pytest.raises(InvalidTopicNameError, match=r"^Topic prefix"):
        TopicNames(prefix)


def test_the_measure_topic_needs_a_pool() -> None:
    with pytest.raises(InvalidTopicNameError, match="needs a pool"):
        TopicNames().name(Topic.MEASURE)


def test_the_measure_pattern_matches_every_pool_topic_and_nothing_else() -> None:
    names = topics("t1.discospace")
    pattern = re.compile(names.measure_pattern)
    assert pattern.match(names.measure("a100_80gb"))
    assert not pattern.match(names.operations)
    assert not pattern.match(topics("t2.discospace").measure("a100"))
    assert not pattern.match("t1xdiscospace.measure.a100")


def test_the_pool_of_a_measure_topic_is_read_back() -> None:
    names = TopicNames.unique()
    assert names.pool_of(names.measure("a100-80gb")) == "a100-80gb"
    with pytest.raises(InvalidTopicNameError, match="not a measure topic"):
        names.pool_of(names.operations)


def test_validate_pool_returns_a_good_name_unchanged() -> None:
    assert validate_pool("H100_sxm-8") == "H100_sxm-8"


EXPECTED_TOPIC = {
    "SpaceSubmitted": "space-submissions",
    "SpaceRegistered": "spaces",
    "SpaceRejected": "spaces",
    "ActuatorRegistered": "actuators",
    "OperationRequested": "operations",
    "OperationCancelRequested": "operations",
    "OperationStarted": "operations",
    "SamplesRequested": "operations",
    "SamplesDrawn": "operations",
    "PipelineJobStarted": "operations",
    "PipelineJobCompleted": "operations",
    "PipelineJobFailed": "operations",
    "OperationCompleted": "operations",
    "OperationFailed": "operations",
    "MeasurementRequested": "measure.a100-80gb",
    "MeasurementStarted": "measurements",
    "MeasurementCompleted": "measurements",
    "MeasurementFailed": "measurements",
    "MeasurementReused": "measurements",
    "DeadLettered": "dead-letter",
}

EXPECTED_KEY = {
    "SpaceSubmitted": b"sub-7c41e2",
    "SpaceRegistered": b"space-5e1d0c9b7a24",
    "SpaceRejected": b"submission:sub-7c41e2",
    "ActuatorRegistered": b"SFTTrainer@a100-80gb",
    "MeasurementRequested": b"9f86d081884c7d65",
    "DeadLettered": b"discospace.operations/0/1042",
}


def test_every_event_goes_to_its_topic_under_any_prefix(
    event_class: Any, payloads: dict[tuple[str, int], dict[str, Any]]
) -> None:
    name = event_class.type_name()
    event = decode(json.dumps(payloads[(name, event_class.current_version())]))
    names = topics("p9.discospace")
    assert event.topic(names) == f"p9.discospace.{EXPECTED_TOPIC[name]}"
    assert event.topic() == f"discospace.{EXPECTED_TOPIC[name]}"


def test_every_event_is_keyed_by_its_aggregate(
    event_class: Any, payloads: dict[tuple[str, int], dict[str, Any]]
) -> None:
    name = event_class.type_name()
    event = decode(json.dumps(payloads[(name, event_class.current_version())]))
    assert event.key() == EXPECTED_KEY.get(name, b"op-3f2a9c1d")


def test_a_rejection_never_has_the_key_of_a_registration(
    payloads: dict[tuple[str, int], dict[str, Any]],
) -> None:
    """The spaces topic is compacted by key, and a submission id is the submitter's text: a
    rejected submission named like a registered space replaced its registration."""
    registered = decode(json.dumps(payloads[("SpaceRegistered", 1)]))
    rejected = dict(payloads[("SpaceRejected", 1)], submission_id=registered.space_id)  # type: ignore[attr-defined]

    assert decode(json.dumps(rejected)).key() != registered.key()
