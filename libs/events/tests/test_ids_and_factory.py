"""Deterministic ids for caused events, the envelope's rules, and building events."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from discospace.events import (
    DeadLettered,
    MeasurementRequested,
    OperationRequested,
    OperationStarted,
    SamplesDrawn,
    SamplesRequested,
    caused_event,
    caused_event_id,
    content_id,
    new_event,
)


def _request(at: datetime, event_id: str = "cause-1") -> OperationRequested:
    return OperationRequested(
        event_id=event_id,
        occurred_at=at,
        operation_id="op-1",
        space_id="space-abc",
        operator="random_walk",
        requested_by="alice",
    )


def _started(cause: OperationRequested, at: datetime, index: int = 0) -> OperationStarted:
    return OperationStarted.caused_by(
        cause,
        at,
        index,
        operation_id="op-1",
        space_id="space-abc",
        operator="random_walk",
        parameters={"seed": 7},
    )


def test_the_same_cause_handled_twice_yields_the_same_event_id(at: datetime) -> None:
    cause = _request(at)
    first = _started(cause, at)
    redelivered = _started(cause, at + timedelta(seconds=30))
    assert first.event_id == redelivered.event_id


def test_different_indexes_yield_different_event_ids(at: datetime) -> None:
    cause = _request(at)
    assert _started(cause, at, 0).event_id != _started(cause, at, 1).event_id


def test_different_causes_yield_different_event_ids(at: datetime) -> None:
    one, other = _request(at, "cause-1"), _request(at, "cause-2")
    assert _started(one, at).event_id != _started(other, at).event_id


def test_events_of_different_types_caused_by_one_event_get_different_ids() -> None:
    assert caused_event_id("cause-1", 0, "SamplesRequested") != caused_event_id(
        "cause-1", 0, "SamplesDrawn"
    )


def test_a_caused_event_id_is_a_uuid_that_does_not_depend_on_the_process() -> None:
    assert caused_event_id("cause-1", 2, "SamplesDrawn") == str(
        uuid.uuid5(uuid.UUID("5b0b2c1e-8f0a-4c7e-9a57-6f1d2a4c0d15"), "cause-1/SamplesDrawn/2")
    )


def test_a_caused_event_records_its_cause_and_inherits_its_correlation(at: datetime) -> None:
    cause = _request(at)
    started = _started(cause, at)
    assert started.causation_id == cause.event_id
    assert started.correlation_id == cause.correlation_id == "op-1"


def test_an_operation_event_is_correlated_with_its_operation_by_default(at: datetime) -> None:
    assert _request(at).correlation_id == "op-1"


def test_occurred_at_is_kept_in_utc_whatever_zone_it_was_given_in(at: datetime) -> None:
    paris = at.astimezone(timezone(timedelta(hours=1)))
    event = _request(paris)
    assert event.occurred_at == at
    assert event.occurred_at.utcoffset() == timedelta(0)


def test_a_time_without_a_zone_is_refused(at: datetime) -> None:
    with pytest.raises(ValidationError, match="timezone"):
        _request(at.replace(tzinfo=None))


def test_events_are_immutable(at: datetime) -> None:
    event = _request(at)
    with pytest.raises(ValidationError, match="frozen"):
        event.operator = "grid"  # type: ignore[misc]


def test_unknown_fields_are_refused(at: datetime) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        OperationRequested(
            event_id="e",
            occurred_at=at,
            operation_id="op-1",
            space_id="s",
            operator="grid",
            requested_by="alice",
            budget=3,  # type: ignore[call-arg]
        )


def test_new_event_reads_the_given_clock_and_draws_a_fresh_id(at: datetime) -> None:
    fields: dict[str, Any] = {
        "operation_id": "op-1",
        "space_id": "s",
        "operator": "grid",
        "requested_by": "alice",
    }
    one = new_event(OperationRequested, lambda: at, **fields)
    two = new_event(OperationRequested, lambda: at, **fields)
    assert one.occurred_at == at
    assert one.event_id != two.event_id
    assert one.causation_id is None


def test_caused_event_reads_the_clock_and_derives_the_id_from_the_cause(at: datetime) -> None:
    cause = _request(at)
    later = at + timedelta(minutes=1)
    drawn = caused_event(
        SamplesDrawn,
        cause,
        lambda: later,
        3,
        operation_id="op-1",
        request_index=3,
        entity_ids=("a",),
        next_position=1,
        exhausted=True,
    )
    assert drawn.event_id == caused_event_id(cause.event_id, 3, "SamplesDrawn")
    assert drawn.occurred_at == later


def test_a_message_dead_lettered_twice_by_one_consumer_yields_one_dead_letter(
    at: datetime,
) -> None:
    def letter(occurred_at: datetime, consumer: str = "explorer") -> DeadLettered:
        return DeadLettered.of_message(
            original=b"\x00not json",
            key=None,
            source_topic="discospace.operations",
            source_partition=2,
            source_offset=17,
            consumer=consumer,
            reason="not JSON",
            occurred_at=occurred_at,
        )

    first, again = letter(at), letter(at + timedelta(seconds=5))
    assert first.event_id == again.event_id
    assert first.event_id != letter(at, "sampler").event_id
    assert first.original() == b"\x00not json"


def test_a_dead_letter_refuses_an_original_that_is_not_base64(at: datetime) -> None:
    with pytest.raises(ValidationError, match="must be base64"):
        DeadLettered(
            event_id="e",
            occurred_at=at,
            reason="r",
            original_base64="not base64!",
            source_topic="t",
            source_partition=0,
            source_offset=0,
            consumer="explorer",
        )


def test_content_id_is_stable_and_separates_its_parts() -> None:
    assert content_id("a", "bc") == content_id("a", "bc")
    assert content_id("a", "bc") != content_id("ab", "c")
    assert len(content_id("x")) == 16


def test_samples_requested_and_measurement_requested_ids_follow_their_causes(
    at: datetime,
) -> None:
    cause = SamplesRequested(
        event_id="sr-1",
        occurred_at=at,
        operation_id="op-1",
        space_id="s",
        request_index=0,
        count=2,
        strategy="sequential",
        experiments=({"actuator": "A", "experiment": "e"},),  # type: ignore[arg-type]
    )
    ids = {
        MeasurementRequested.caused_by(
            cause,
            datetime(2026, 1, 1, tzinfo=UTC),
            index,
            operation_id="op-1",
            request_id=f"req-{index}",
            space_id="s",
            sample_store="store",
            entity_id=f"entity-{index}",
            entity_values={"x": index},
            experiment_id="e",
            experiment={"actuator": "A", "experiment": "e"},
            pool="p",
        ).event_id
        for index in (0, 1, 0)
    }
    assert len(ids) == 2
