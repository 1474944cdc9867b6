"""Pipeline events and the parent of a child operation: what they carry across the wire."""

from __future__ import annotations

import json
from typing import Any

import pytest

from discospace.events import (
    EventDecodeError,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
    decode,
    encode,
)

Payloads = dict[tuple[str, int], dict[str, Any]]


def _stored(payloads: Payloads, cls: Any) -> dict[str, Any]:
    return dict(payloads[(cls.type_name(), cls.current_version())])


def test_a_request_without_a_parent_is_written_exactly_as_before(payloads: Payloads) -> None:
    stored = _stored(payloads, OperationRequested)

    event = decode(json.dumps(stored))

    assert event.parent_operation_id is None
    assert "parent_operation_id" not in json.loads(encode(event))


def test_a_child_operation_carries_the_pipeline_that_asked_for_it(payloads: Payloads) -> None:
    child = {**_stored(payloads, OperationRequested), "operation_id": "op-child"}
    child["correlation_id"] = "op-child"

    event = decode(encode(decode(json.dumps({**child, "parent_operation_id": "op-3f2a9c1d"}))))

    assert event.parent_operation_id == "op-3f2a9c1d"
    assert event.key() == b"op-child"


def test_an_empty_parent_is_refused(payloads: Payloads) -> None:
    with pytest.raises(EventDecodeError, match="parent_operation_id"):
        decode(json.dumps({**_stored(payloads, OperationRequested), "parent_operation_id": ""}))


@pytest.mark.parametrize("cls", [PipelineJobStarted, PipelineJobCompleted, PipelineJobFailed])
def test_every_job_event_is_an_event_of_the_pipeline_operation(
    payloads: Payloads, cls: Any
) -> None:
    event = decode(json.dumps(_stored(payloads, cls)))

    assert isinstance(event, cls)
    assert (event.correlation_id, event.key()) == ("op-3f2a9c1d", b"op-3f2a9c1d")


def test_a_job_result_keeps_its_json_shape_across_the_wire(payloads: Payloads) -> None:
    stored = _stored(payloads, PipelineJobCompleted)

    event = decode(encode(decode(json.dumps(stored))))

    assert event.result == stored["result"]
    assert event.trial == 2


def test_a_job_started_outside_trials_has_no_trial_number(at: Any) -> None:
    started = PipelineJobStarted(
        event_id="e-1", occurred_at=at, operation_id="op-1", job="probe", stage="probe"
    )

    assert (started.trial, started.child_operation_id, started.space_id) == (None, None, None)
    assert started.correlation_id == "op-1"


def test_a_negative_trial_number_is_refused(payloads: Payloads) -> None:
    with pytest.raises(EventDecodeError, match="trial"):
        decode(json.dumps({**_stored(payloads, PipelineJobFailed), "trial": -1}))


def test_a_failure_needs_a_reason(payloads: Payloads) -> None:
    with pytest.raises(EventDecodeError, match="reason"):
        decode(json.dumps({**_stored(payloads, PipelineJobFailed), "reason": ""}))


def test_a_job_caused_by_the_same_event_twice_gets_the_same_id(payloads: Payloads, at: Any) -> None:
    cause = decode(json.dumps(_stored(payloads, PipelineJobStarted)))

    first, second = (
        PipelineJobCompleted.caused_by(
            cause, at, operation_id="op-3f2a9c1d", job="probe", stage="probe", result={}
        )
        for _ in range(2)
    )

    assert first.event_id == second.event_id
    assert first.causation_id == cause.event_id
