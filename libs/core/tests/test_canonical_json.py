"""Canonical JSON: the text `json.dumps` writes with sorted keys, no spaces, UTF-8, no NaN."""

from __future__ import annotations

import json
import math
import random

import pytest

from discospace.core.canonical import canonical_json


def _dumps(data: object) -> str:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


VALUES = [
    {},
    [],
    "",
    'quote " and backslash \\ and newline \n and tab \t',
    "non-ASCII: é, ß, 漢字, emoji 🙂, control \x01",
    0,
    -1,
    2**70,
    1.5,
    -0.0,
    1e-320,
    1.7976931348623157e308,
    0.1 + 0.2,
    True,
    False,
    None,
    {"b": 1, "a": {"d": [1, 2.5, "x"], "c": None}, "é": True, "A": False},
    [{"z": 1, "y": [{"x": {}}]}, [], [[]]],
    {"model_name": "llama-7b", "batch_size": 16, "learning_rate": 0.0003, "use_lora": True},
]


@pytest.mark.parametrize("data", VALUES, ids=range(len(VALUES)))
def test_the_text_is_what_json_dumps_writes_with_the_canonical_options(data: object) -> None:
    assert canonical_json(data) == _dumps(data)


def test_random_nested_values_read_back_and_match_json_dumps() -> None:
    generator = random.Random(7)

    def value(depth: int) -> object:
        kind = generator.randrange(7 if depth < 4 else 4)
        if kind == 0:
            return generator.uniform(-1e6, 1e6)
        if kind == 1:
            return generator.randrange(-(2**40), 2**40)
        if kind == 2:
            return "".join(chr(generator.randrange(1, 0x3000)) for _ in range(5))
        if kind == 3:
            return generator.choice([True, False, None])
        if kind in (4, 5):
            return {f"k{generator.randrange(99)}": value(depth + 1) for _ in range(4)}
        return [value(depth + 1) for _ in range(3)]

    for _ in range(300):
        data = value(0)
        text = canonical_json(data)
        assert text == _dumps(data)
        assert json.loads(text) == data


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_and_the_next_call_is_unaffected(number: float) -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        canonical_json({"a": [1, {"b": number}]})
    assert canonical_json({"a": [1, {"b": 2}]}) == '{"a":[1,{"b":2}]}'


def test_a_value_json_cannot_write_is_refused_with_its_type() -> None:
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        canonical_json({"a": {1, 2}})


def test_keys_of_mixed_types_are_refused_as_json_dumps_refuses_them() -> None:
    with pytest.raises(TypeError):
        _dumps({"a": 1, 2: 3})
    with pytest.raises(TypeError):
        canonical_json({"a": 1, 2: 3})
