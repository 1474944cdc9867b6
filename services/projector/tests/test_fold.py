"""The fold: each event becomes the rows it adds to the projection tables (no ClickHouse)."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from discospace.core import ExperimentRef, PropertySpec, SpaceSpec
from discospace.events import (
    MeasurementRequested,
    OperationFailed,
    OperationStarted,
    SamplesRequested,
    decode,
    new_event,
)
from discospace.projector.fold import rows_of
from discospace.projector.queries import ROW_TYPES
from discospace.store.schema import Row, SchemaError, Table
from discospace.store.tables import (
    ACTUATORS,
    MEASUREMENTS,
    OPERATIONS,
    PROJECTION_TABLES,
    RESULTS,
    SPACES,
)


def _only(rows: tuple[Row, ...], table: Table) -> Row:
    matching = [row for row in rows if row.table is table]
    assert len(matching) == 1
    return matching[0]


def _named(table: Table, row: Row) -> NamedTuple:
    return ROW_TYPES[table](**row.values)


@pytest.mark.parametrize("table", PROJECTION_TABLES, ids=lambda table: table.name)
def test_every_read_row_type_names_its_table_columns_in_order(table: Table) -> None:
    assert ROW_TYPES[table]._fields == table.column_names


def test_a_row_missing_a_column_is_refused_when_built() -> None:
    with pytest.raises(SchemaError, match="A row of operations lacks column"):
        OPERATIONS.row(operation_id="op-1", event_id="event")


def test_a_registered_space_is_stored_with_its_spec_size_and_catalog(story) -> None:
    row = _named(SPACES, _only(rows_of(story.space_a), SPACES))
    assert row.space_key == story.space_a.space_id
    assert (row.status, row.sample_store, row.size) == ("registered", "fms-test", "16")
    assert SpaceSpec.model_validate_json(row.spec) == story.space_a.spec
    assert [e["experiment"] for e in json.loads(row.experiments)] == ["finetune"]


def test_a_rejection_keeps_its_reason_under_the_space_id(story) -> None:
    row = _named(SPACES, _only(rows_of(story.rejected), SPACES))
    assert (row.space_key, row.status) == (story.rejected.space_id, "rejected")
    assert row.reason == "no actuator offers it"


def test_a_submission_too_broken_for_a_space_id_is_keyed_by_its_submission(history) -> None:
    broken = SpaceSpec(
        sample_store="s",
        entity_space=(PropertySpec(name="x", values=()),),
        measurement_space=(),
    )
    submitted = history.submit(broken)
    row = _named(SPACES, _only(rows_of(submitted), SPACES))
    assert row.space_key == f"submission:{submitted.submission_id}"
    assert (row.space_id, row.status, row.size) == ("", "submitted", None)


@pytest.mark.parametrize(
    "entity_space",
    [
        (PropertySpec(name="x", range=(0, 1e308), interval=1e-308),),  # 10^616 values
        tuple(PropertySpec(name=f"p{i}", values=tuple(range(1000))) for i in range(1500)),
    ],
    ids=["a-range-of-10^616", "10^4500-entities"],
)
def test_a_submission_that_cannot_be_counted_or_hashed_is_keyed_by_its_submission(
    history, entity_space: tuple[PropertySpec, ...]
) -> None:
    """These raised ValueError and OverflowError in the fold before (its size has more digits
    than `str` writes; NaN has no canonical JSON), so the projector could not show them."""
    spec = SpaceSpec(
        sample_store="s",
        entity_space=entity_space,
        measurement_space=(ExperimentRef(actuator="A", experiment="e"),),
    )
    submitted = history.submit(spec)
    row = _named(SPACES, _only(rows_of(submitted), SPACES))
    assert (row.space_key, row.space_id, row.size) == (
        f"submission:{submitted.submission_id}",
        "",
        None,
    )


def test_a_completed_measurement_becomes_a_measurement_row_and_a_store_result(story) -> None:
    completed = next(e for e in story.events if e.type == "MeasurementCompleted")
    rows = rows_of(completed)
    measurement = _named(MEASUREMENTS, _only(rows, MEASUREMENTS))
    result = _named(RESULTS, _only(rows, RESULTS))
    assert (measurement.kind, measurement.is_valid, measurement.event_id) == (
        "completed",
        True,
        completed.event_id,
    )
    assert (result.sample_store, result.entity_id) == ("fms-test", completed.entity_id)
    assert json.loads(result.values) == completed.values
    assert json.loads(result.entity_values) == completed.entity_values


def test_stored_values_keep_whole_numbers_apart_from_reals(story) -> None:
    completed = next(e for e in story.events if e.type == "MeasurementCompleted")
    values = json.loads(_named(RESULTS, _only(rows_of(completed), RESULTS)).values)
    assert isinstance(values["peak_gpu_memory_mib"], int)
    assert isinstance(values["train_tokens_per_second"], float)


def test_an_invalid_result_keeps_its_reason(story) -> None:
    invalid = next(e for e in story.events if getattr(e, "is_valid", True) is False)
    row = _named(MEASUREMENTS, _only(rows_of(invalid), MEASUREMENTS))
    assert (row.is_valid, row.reason) == (False, "CUDA out of memory")


def test_a_failure_keeps_its_reason_attempt_and_whether_it_may_be_retried(story) -> None:
    failures = [e for e in story.events if e.type == "MeasurementFailed"]
    rows = [_named(MEASUREMENTS, _only(rows_of(e), MEASUREMENTS)) for e in failures]
    assert [(r.kind, r.reason, r.retryable, r.attempt, r.is_valid) for r in rows] == [
        ("failed", "the image does not exist", False, 1, None),
        ("failed", "node lost", True, 1, None),
    ]


def test_a_retried_request_keeps_its_attempt_and_has_no_outcome_yet(story) -> None:
    retry = next(e for e in story.events if isinstance(e, MeasurementRequested) and e.attempt > 1)
    row = _named(MEASUREMENTS, _only(rows_of(retry), MEASUREMENTS))
    assert (row.kind, row.attempt, row.is_valid, row.reason, row.retryable, row.values) == (
        "requested",
        2,
        None,
        "",
        False,
        "{}",
    )


def test_a_reuse_counts_as_a_first_attempt_with_the_values_it_reuses(story) -> None:
    reused = next(e for e in story.events if e.type == "MeasurementReused")
    row = _named(MEASUREMENTS, _only(rows_of(reused), MEASUREMENTS))
    assert (row.attempt, row.retryable) == (1, False)
    assert json.loads(row.values) == reused.values


def test_a_reuse_is_a_measurement_of_the_reusing_space_but_no_new_result(story) -> None:
    reused = next(e for e in story.events if e.type == "MeasurementReused")
    rows = rows_of(reused)
    assert [row.table for row in rows] == [MEASUREMENTS]
    row = _named(MEASUREMENTS, rows[0])
    assert (row.kind, row.space_id, row.is_valid) == ("reused", story.space_b.space_id, True)


def test_operation_lifecycle_events_keep_their_payload(story) -> None:
    started = next(e for e in story.events if isinstance(e, OperationStarted))
    row = _named(OPERATIONS, _only(rows_of(started), OPERATIONS))
    expected = ("op-a", "OperationStarted", story.space_a.space_id)
    assert (row.operation_id, row.type, row.space_id) == expected
    assert decode(row.payload) == started


def test_a_cancel_request_is_stored_without_a_space(story) -> None:
    cancel = story.op_a.cancel()
    row = _named(OPERATIONS, _only(rows_of(cancel), OPERATIONS))
    assert (row.type, row.space_id) == ("OperationCancelRequested", "")


def test_an_operation_refused_at_start_is_stored_without_a_space() -> None:
    failed = new_event(OperationFailed, operation_id="op-refused", reason="no such operator")
    row = _named(OPERATIONS, _only(rows_of(failed), OPERATIONS))
    assert (row.operation_id, row.type, row.space_id) == ("op-refused", "OperationFailed", "")


def test_events_the_views_do_not_need_add_no_row(story) -> None:
    samples = next(e for e in story.events if isinstance(e, SamplesRequested))
    assert rows_of(samples) == ()


def test_an_actuator_announcement_keeps_its_pool_worker_and_catalog(story) -> None:
    announcement = story.events[0]
    row = _named(ACTUATORS, _only(rows_of(announcement), ACTUATORS))
    assert (row.actuator, row.pool, row.worker_id) == ("SFTTrainer", "a100", "w0")
    assert json.loads(row.experiments)[0]["target_properties"] == [
        "train_tokens_per_second",
        "peak_gpu_memory_mib",
    ]
