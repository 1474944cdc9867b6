"""One stored payload per event type and schema version: every one still loads.

`payloads/older_shapes/` holds payloads of a current version in a shape that older writers
used before an additive change moved a value (objectives once sat in `options`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from discospace.events import (
    OperationParameters,
    all_event_types,
    decode,
    decode_verbatim,
    encode,
)
from discospace.events.upcasting import has_upcaster, objectives_out_of_options

Stored = tuple[tuple[str, int], dict[str, Any]]


def test_every_stored_payload_decodes_to_the_current_version_of_its_type(
    stored_payload: Stored,
) -> None:
    (name, _), payload = stored_payload
    event = decode(json.dumps(payload).encode())
    assert event.type == name
    assert event.schema_version == type(event).current_version()


def test_a_stored_payload_of_the_current_version_is_written_back_unchanged(
    stored_payload: Stored,
) -> None:
    (_, version), payload = stored_payload
    event = decode(json.dumps(payload).encode())
    if version == event.schema_version:
        assert json.loads(encode(event)) == payload
    else:
        assert json.loads(encode(event))["schema_version"] > version


def test_every_event_type_has_a_stored_payload_for_every_version_up_to_the_current(
    payloads: dict[tuple[str, int], dict[str, Any]],
) -> None:
    missing = [
        f"{cls.type_name()}.v{version}.json"
        for cls in all_event_types()
        for version in range(1, cls.current_version() + 1)
        if (cls.type_name(), version) not in payloads
    ]
    assert missing == []


def test_no_stored_payload_names_a_type_or_version_that_does_not_exist(
    payloads: dict[tuple[str, int], dict[str, Any]],
) -> None:
    known = {
        (cls.type_name(), version)
        for cls in all_event_types()
        for version in range(1, cls.current_version() + 1)
    }
    assert set(payloads) - known == set()


def test_a_stored_payload_is_read_verbatim_exactly_when_it_is_of_the_current_version(
    stored_payload: Stored,
) -> None:
    """`decode_verbatim` says whether the bytes may stand for the event (the projector then
    stores them as read): not when an upcast rewrote them, whichever way they are spaced."""
    (_, version), payload = stored_payload
    stored = json.dumps(payload).encode()
    event, verbatim = decode_verbatim(stored)
    assert event == decode(stored)
    assert verbatim is (version == event.schema_version)
    assert decode_verbatim(encode(event)) == (event, True)


def test_every_past_version_has_an_upcaster_to_the_next(event_class: Any) -> None:
    for version in range(1, event_class.current_version()):
        assert has_upcaster(event_class.type_name(), version)


def test_a_version_1_measurement_completed_is_upcast_with_an_empty_uncertainty(
    payloads: dict[tuple[str, int], dict[str, Any]],
) -> None:
    old = payloads[("MeasurementCompleted", 1)]
    assert "uncertainty" not in old
    event = decode(json.dumps(old))
    assert event.schema_version == 2
    assert event.uncertainty == {}  # type: ignore[attr-defined]
    assert event.values == old["values"]  # type: ignore[attr-defined]


OLDER_SHAPES = sorted((Path(__file__).parent / "payloads" / "older_shapes").glob("*.json"))
"""Payloads of a current version in a shape older writers used: they must still load."""


@pytest.mark.parametrize("path", OLDER_SHAPES, ids=[path.stem for path in OLDER_SHAPES])
def test_objectives_stored_in_the_options_load_as_the_operations_objectives(path: Path) -> None:
    old = json.loads(path.read_text())
    listed = old["parameters"]["options"]["objectives"]

    event = decode(json.dumps(old))

    parameters = event.parameters  # type: ignore[attr-defined]
    assert [o.model_dump() for o in parameters.objectives] == listed
    assert parameters.options == {"population_size": 6}
    written = json.loads(encode(event))["parameters"]
    assert (written["objectives"], "objectives" in written["options"]) == (listed, False)


@pytest.mark.parametrize("path", OLDER_SHAPES, ids=[path.stem for path in OLDER_SHAPES])
@pytest.mark.parametrize(
    "objectives",
    [
        [
            {"property": "tps", "direction": "max"},
            {"property": "mem", "direction": "min"},
            {"property": "energy_j", "direction": "min"},
        ],
        [],
        [{"direction": "max"}],
    ],
    ids=["three", "none", "no-property"],
)
def test_objectives_in_the_options_that_the_field_refuses_stay_options(
    path: Path, objectives: list[dict[str, str]]
) -> None:
    """Before `objectives` was a field, a request with three objectives (or none) in its
    options was a valid event the explorer failed at its start: moved into the field, it no
    longer decoded, and was dead-lettered at every replay."""
    old = json.loads(path.read_text())
    old["parameters"]["options"]["objectives"] = objectives

    event = decode(json.dumps(old))

    parameters = event.parameters  # type: ignore[attr-defined]
    assert parameters.objectives is None
    assert parameters.options["objectives"] == objectives


def test_objectives_given_both_as_a_parameter_and_in_the_options_are_refused() -> None:
    objectives = [{"property": "tps", "direction": "max"}]
    with pytest.raises(ValidationError, match="objectives are given twice"):
        OperationParameters.model_validate(
            {"objectives": objectives, "options": {"objectives": objectives}}
        )


def test_moving_the_objectives_out_of_the_options_leaves_its_input_as_it_was() -> None:
    old = {"options": {"objectives": [{"property": "tps", "direction": "max"}], "k": 1}}

    moved = objectives_out_of_options(old)

    assert moved == {"objectives": [{"property": "tps", "direction": "max"}], "options": {"k": 1}}
    assert "objectives" in old["options"]
    assert objectives_out_of_options({"options": {"k": 1}}) == {"options": {"k": 1}}


@pytest.mark.parametrize("path", OLDER_SHAPES, ids=[path.stem for path in OLDER_SHAPES])
def test_stopping_rules_written_before_max_training_existed_load_without_it(path: Path) -> None:
    old = json.loads(path.read_text())
    assert "max_training" not in old["parameters"]["stopping"]

    event = decode(json.dumps(old))

    assert event.parameters.stopping.max_training is None  # type: ignore[attr-defined]
