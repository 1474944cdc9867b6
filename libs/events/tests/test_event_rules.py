"""The rules individual events enforce beyond field types."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.events import (
    ActuatorRegistered,
    EventDecodeError,
    MeasurementCompleted,
    MeasurementRequested,
    MeasurementReused,
    OperationParameters,
    SamplesRequested,
    decode,
    encode,
    measurement_request_id,
)

Payloads = dict[tuple[str, int], dict[str, Any]]
_STORED_COMPLETED = json.loads(
    (Path(__file__).parent / "payloads" / "MeasurementCompleted.v2.json").read_text()
)


def _payload(payloads: Payloads, cls: Any, **changes: Any) -> dict[str, Any]:
    return {**payloads[(cls.type_name(), cls.current_version())], **changes}


def test_samples_are_requested_either_by_count_or_by_points(payloads: Payloads) -> None:
    with pytest.raises(ValidationError, match="either count"):
        SamplesRequested.model_validate(
            _payload(payloads, SamplesRequested, points=[{"batch_size": 2}])
        )
    with pytest.raises(ValidationError, match="either count"):
        SamplesRequested.model_validate(_payload(payloads, SamplesRequested, count=None))


def test_explicit_points_need_no_strategy(payloads: Payloads) -> None:
    event = SamplesRequested.model_validate(
        _payload(payloads, SamplesRequested, count=None, strategy=None, points=[{"x": 1}])
    )
    assert event.points == ({"x": 1},)


def test_inputs_of_explicit_points_come_one_mapping_per_point(payloads: Payloads) -> None:
    points = {"count": None, "strategy": None, "points": [{"x": 1}, {"x": 2}]}
    with pytest.raises(ValidationError, match="one mapping per point"):
        SamplesRequested.model_validate(
            _payload(payloads, SamplesRequested, **points, inputs=[{"e.t": 1.5}])
        )
    event = SamplesRequested.model_validate(
        _payload(payloads, SamplesRequested, **points, inputs=[{"e.t": 1.5}, {"e.t": 2.5}])
    )
    assert event.inputs == ({"e.t": 1.5}, {"e.t": 2.5})


def test_a_requests_fingerprint_is_what_it_asks_for_whenever_it_was_made(
    payloads: Payloads,
) -> None:
    points = {"count": None, "strategy": None, "points": [{"x": 1, "y": "a"}]}
    request = SamplesRequested.model_validate(_payload(payloads, SamplesRequested, **points))
    later = request.model_copy(update={"occurred_at": "2030-01-01T00:00:00Z"})
    reordered = request.model_copy(update={"points": ({"y": "a", "x": 1},)})
    other = request.model_copy(update={"points": ({"x": 2, "y": "a"},)})
    attempt = request.model_copy(update={"attempt": 2})

    assert request.fingerprint() == later.fingerprint() == reordered.fingerprint()
    assert request.fingerprint() == decode(encode(request)).fingerprint()
    assert len({request.fingerprint(), other.fingerprint(), attempt.fingerprint()}) == 3


def test_a_count_needs_a_strategy(payloads: Payloads) -> None:
    with pytest.raises(ValidationError, match="count needs a strategy"):
        SamplesRequested.model_validate(_payload(payloads, SamplesRequested, strategy=None))


def test_an_unknown_sampling_strategy_is_refused(payloads: Payloads) -> None:
    with pytest.raises(ValidationError, match="strategy"):
        SamplesRequested.model_validate(_payload(payloads, SamplesRequested, strategy="zigzag"))


def test_an_invalid_measurement_carries_a_reason_and_a_valid_one_does_not(
    payloads: Payloads,
) -> None:
    with pytest.raises(ValidationError, match="invalid_reason is given exactly when"):
        MeasurementCompleted.model_validate(
            _payload(payloads, MeasurementCompleted, is_valid=False)
        )
    with pytest.raises(ValidationError, match="invalid_reason is given exactly when"):
        MeasurementCompleted.model_validate(
            _payload(payloads, MeasurementCompleted, invalid_reason="OOM")
        )


def test_a_valid_measurement_has_values(payloads: Payloads) -> None:
    with pytest.raises(ValidationError, match="at least one value"):
        MeasurementCompleted.model_validate(
            _payload(payloads, MeasurementCompleted, values={}, uncertainty={})
        )


def test_uncertainty_is_only_given_for_measured_values(payloads: Payloads) -> None:
    with pytest.raises(ValidationError, match="uncertainty of 'energy_j'"):
        MeasurementCompleted.model_validate(
            _payload(payloads, MeasurementCompleted, uncertainty={"energy_j": 1.0})
        )


def test_a_completed_measurement_converts_to_the_domain_result(payloads: Payloads) -> None:
    valid = MeasurementCompleted.model_validate(_payload(payloads, MeasurementCompleted))
    assert valid.result() == ValidMeasurement(
        values=valid.values, uncertainty={"train_tokens_per_second": 11.8}
    )
    reused = MeasurementReused.model_validate(_payload(payloads, MeasurementReused))
    assert reused.result() == InvalidMeasurement(reason="CUDA out of memory")


def test_property_values_keep_their_json_kind(payloads: Payloads) -> None:
    event = MeasurementCompleted.model_validate_json(
        json.dumps(
            _payload(
                payloads,
                MeasurementCompleted,
                entity_values={"flag": True, "n": 4, "x": 4.5, "name": "llama"},
            )
        )
    )
    kinds = {name: type(value) for name, value in event.entity_values.items()}
    assert kinds == {"flag": bool, "n": int, "x": float, "name": str}


def test_a_measurement_request_names_a_pool_that_can_be_a_topic(payloads: Payloads) -> None:
    with pytest.raises(ValidationError, match="Pool name"):
        MeasurementRequested.model_validate(
            _payload(payloads, MeasurementRequested, pool="a100.80gb")
        )


def test_an_attempt_fits_the_stores_16_bit_column(payloads: Payloads) -> None:
    """An attempt over it failed the projector's whole batch ("Unable to create native array
    for column 'attempt'"); `gives_up` ends every measurement's retries by then."""
    assert MeasurementRequested.model_validate(
        _payload(payloads, MeasurementRequested, attempt=65_535)
    )
    with pytest.raises(ValidationError, match="less than or equal to 65535"):
        MeasurementRequested.model_validate(
            _payload(payloads, MeasurementRequested, attempt=65_536)
        )


def test_an_actuator_announces_only_its_own_experiments(payloads: Payloads) -> None:
    payload = _payload(payloads, ActuatorRegistered)
    other = {**payload["experiments"][0], "actuator": "Zeus"}
    with pytest.raises(ValidationError, match="belongs to actuator 'Zeus'"):
        ActuatorRegistered.model_validate({**payload, "experiments": [other]})


def test_operation_parameters_default_to_a_random_walk_over_the_whole_space() -> None:
    parameters = OperationParameters()
    assert (parameters.number_entities, parameters.sampler, parameters.batch_size) == (
        "all",
        "random",
        1,
    )


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"sampler": "grouped"}, "the grouped sampler needs group_by"),
        ({"group_by": ["model_name"]}, "group_by is only used by the grouped sampler"),
        ({"stopping": {"target_value": 3.0}}, "need an objective"),
        ({"number_entities": 0}, "greater than 0"),
        ({"number_entities": "some"}, "'all'"),
        ({"objective": {"property": "x", "direction": "up"}}, "'min' or 'max'"),
        ({"stopping": {"max_duration": "soon"}}, "'soon' is not a time"),
        # one decision round fills the window: 10^12 built 5 x 10^8 requests at once
        ({"batch_size": 10**12}, "less than or equal to 100000"),
    ],
)
def test_incoherent_operation_parameters_are_refused(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        OperationParameters.model_validate(fields)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"beta": 1e309}', "options.beta"),
        ('{"grid": {"lr": [0.1, -1e999]}}', r"options.grid.lr\[1\]"),
    ],
)
def test_options_read_from_json_refuse_a_number_that_is_not_finite(text: str, where: str) -> None:
    """JSON's 1e309 reads as infinity, which JsonValue lets through; written out again it would
    be null, so another replica would read other options than the one that decided."""
    with pytest.raises(ValidationError, match=f"{where} is not a finite number"):
        OperationParameters.model_validate_json(f'{{"options": {text}}}')


def test_a_duration_stopping_rule_reads_the_time_notation() -> None:
    parameters = OperationParameters.model_validate({"stopping": {"max_duration": "1h20m40s"}})
    assert str(parameters.stopping.max_duration) == "4840sec"


def test_a_measurement_request_id_depends_only_on_operation_entity_and_experiment() -> None:
    one = measurement_request_id("op-1", "9f86d081884c7d65", "finetune-v1")
    assert one == measurement_request_id("op-1", "9f86d081884c7d65", "finetune-v1")
    assert one.startswith("req-")
    others = {
        measurement_request_id("op-2", "9f86d081884c7d65", "finetune-v1"),
        measurement_request_id("op-1", "2c26b46b68ffc68f", "finetune-v1"),
        measurement_request_id("op-1", "9f86d081884c7d65", "finetune-v2"),
    }
    assert one not in others
    assert len(others) == 3


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_value_json_cannot_carry_is_refused(payloads: Payloads, bad: float) -> None:
    with pytest.raises(ValidationError, match="finite number"):
        MeasurementCompleted.model_validate(
            _payload(payloads, MeasurementCompleted, values={"x": bad}, uncertainty={})
        )


scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)


@settings(max_examples=60, deadline=None)
@given(values=st.dictionaries(st.text(min_size=1, max_size=10), scalars, min_size=1, max_size=5))
def test_any_measured_values_survive_the_wire_with_their_kinds(values: dict[str, Any]) -> None:
    payload = {**_STORED_COMPLETED, "values": values, "uncertainty": {}}
    event = decode(json.dumps(payload))
    again = decode(encode(event))
    assert again.values == values  # type: ignore[attr-defined]
    assert [type(v) for v in again.values.values()] == [type(v) for v in values.values()]  # type: ignore[attr-defined]


_STORED_OPERATION_COMPLETED = json.loads(
    (Path(__file__).parent / "payloads" / "OperationCompleted.v1.json").read_text()
)
ZEUS_CHOICE = {
    "values": {"batch_size": 128, "power_limit": 175},
    "expected_cost": 41234.5,
    "cost_so_far": 123456.0,
    "recurrence_costs": [50000.0, 41000.0, 32456.0],
    "recurrence_phases": ["pruning", "pruning", "bandit"],
}


def test_a_completion_without_a_choice_is_written_exactly_as_before() -> None:
    event = decode(json.dumps(_STORED_OPERATION_COMPLETED))

    assert event.choice is None  # type: ignore[attr-defined]
    assert json.loads(encode(event)) == _STORED_OPERATION_COMPLETED


def test_an_operators_choice_travels_with_its_completion() -> None:
    event = decode(json.dumps({**_STORED_OPERATION_COMPLETED, "choice": ZEUS_CHOICE}))

    again = decode(encode(event))
    assert again.choice is not None  # type: ignore[attr-defined]
    assert again.choice.model_dump(mode="json") == ZEUS_CHOICE  # type: ignore[attr-defined]


def test_a_choice_names_one_phase_per_recurrence_cost() -> None:
    with pytest.raises(EventDecodeError, match="one phase per recurrence"):
        decode(
            json.dumps(
                {
                    **_STORED_OPERATION_COMPLETED,
                    "choice": {**ZEUS_CHOICE, "recurrence_phases": ["pruning"]},
                }
            )
        )
