import pytest
from pydantic import TypeAdapter, ValidationError

from discospace.core import InvalidMeasurement, MeasurementResult, ValidMeasurement

results = TypeAdapter(MeasurementResult)


def test_a_valid_measurement_holds_values_and_optional_uncertainty() -> None:
    result = ValidMeasurement(values={"tps": 4210.5, "mem": 60211}, uncertainty={"tps": 12.0})
    assert result.is_valid
    assert result.values["mem"] == 60211


def test_an_invalid_measurement_holds_a_reason() -> None:
    result = InvalidMeasurement(reason="CUDA out of memory")
    assert not result.is_valid


def test_a_result_is_told_apart_by_its_kind_when_read_back() -> None:
    valid = results.validate_json(ValidMeasurement(values={"tps": 1.5}).model_dump_json())
    invalid = results.validate_python({"kind": "invalid", "reason": "oom"})
    assert isinstance(valid, ValidMeasurement)
    assert isinstance(invalid, InvalidMeasurement)


@pytest.mark.parametrize(
    "payload",
    [
        {"kind": "valid", "values": {}},
        {"kind": "valid", "values": {"a": 1}, "uncertainty": {"b": 0.1}},
        {"kind": "valid", "values": {"a": 1}, "uncertainty": {"a": -1.0}},
        {"kind": "invalid", "reason": ""},
        {"kind": "invalid", "reason": "x", "extra": 1},
    ],
)
def test_an_ill_formed_result_is_rejected(payload: dict) -> None:
    with pytest.raises(ValidationError):
        results.validate_python(payload)


def test_numpy_scalars_are_kept_as_the_values_they_stand_for() -> None:
    """Plugins often return numpy scalars: a boolean was recorded as 0.0, a whole number as a
    real one, and a float32 with digits nobody measured."""
    import numpy as np

    result = ValidMeasurement(
        values={
            "converged": np.bool_(False),
            "steps": np.int64(3),
            "lr": np.float32(0.1),
            "tps": np.float64(4210.5),
            "name": np.str_("lora"),
        },
        uncertainty={"tps": np.float32(0.5)},
    )
    assert result.values == {
        "converged": False,
        "steps": 3,
        "lr": 0.1,
        "tps": 4210.5,
        "name": "lora",
    }
    assert [type(v) for v in result.values.values()] == [bool, int, float, float, str]
    assert result.uncertainty == {"tps": 0.5}
