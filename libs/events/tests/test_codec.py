"""Encoding and decoding: round trips, upcasting on read, and one-sentence errors."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError

from discospace.events import (
    EventDecodeError,
    MeasurementCompleted,
    MeasurementStarted,
    OperationCancelRequested,
    OperationRequested,
    SpaceSubmitted,
    codec,
    decode,
    decode_as,
    encode,
    written_type,
)
from discospace.events.codec import upcast_payload

Payloads = dict[tuple[str, int], dict[str, Any]]


def _bytes(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def _current(payloads: Payloads, cls: Any) -> dict[str, Any]:
    return dict(payloads[(cls.type_name(), cls.current_version())])


def test_every_event_survives_an_encode_decode_round_trip(
    event_class: Any, payloads: Payloads
) -> None:
    event = event_class.model_validate(_current(payloads, event_class))
    again = decode(encode(event))
    assert again == event
    assert type(again) is event_class


def test_encoding_is_compact_utf8_json_with_the_envelope(payloads: Payloads) -> None:
    event = OperationRequested.model_validate(_current(payloads, OperationRequested))
    data = json.loads(encode(event).decode("utf-8"))
    assert data["type"] == "OperationRequested"
    assert data["schema_version"] == 1
    assert data["occurred_at"].endswith("Z")


def test_bytes_that_are_not_json_are_reported_as_not_json() -> None:
    with pytest.raises(EventDecodeError, match=r"^not JSON: ") as caught:
        decode(b'{"type": "OperationRequested",')
    assert caught.value.kind == "malformed"


def test_bytes_that_are_not_text_are_reported_as_not_json() -> None:
    with pytest.raises(EventDecodeError, match=r"^not JSON: ") as caught:
        decode(b"\xff\xfe\x00")
    assert caught.value.kind == "malformed"


def test_json_that_is_not_an_object_is_not_an_event() -> None:
    with pytest.raises(EventDecodeError, match="a JSON object is expected, got list") as caught:
        decode(b"[1, 2]")
    assert caught.value.kind == "malformed"


def test_an_object_without_a_type_is_not_an_event() -> None:
    with pytest.raises(EventDecodeError, match="has no 'type'") as caught:
        decode(b'{"schema_version": 1}')
    assert caught.value.kind == "malformed"


def test_an_unknown_type_is_named_in_the_error() -> None:
    with pytest.raises(EventDecodeError, match="unknown event type 'SpaceExploded'") as caught:
        decode(b'{"type": "SpaceExploded", "schema_version": 1}')
    assert caught.value.kind == "unknown_type"
    assert caught.value.type_name == "SpaceExploded"


def test_a_schema_invalid_event_names_its_type_version_field_and_problem(
    payloads: Payloads,
) -> None:
    payload = _current(payloads, OperationRequested)
    payload["parameters"] = {**payload["parameters"], "batch_size": 0}
    with pytest.raises(EventDecodeError) as caught:
        decode(_bytes(payload))
    assert str(caught.value) == (
        "not a valid OperationRequested v1: parameters.batch_size: Input should be greater than 0"
    )
    assert caught.value.kind == "invalid"
    assert (caught.value.type_name, caught.value.schema_version) == ("OperationRequested", 1)


@pytest.mark.parametrize("as_text", [False, True])
def test_a_lone_surrogate_is_refused_as_not_valid_unicode_and_a_pair_is_read(
    payloads: Payloads, as_text: bool
) -> None:
    """`"\\ud800"` is valid JSON, and pydantic read it into a string that UTF-8 cannot encode: a
    space holding it crashed the registry and the projector instead of being dead-lettered."""
    payload = copy.deepcopy(_current(payloads, SpaceSubmitted))
    values = payload["spec"]["entity_space"][0]

    values["values"] = ["a\ud800"]
    data = _bytes(payload)  # json.dumps writes it as the escape a producer would
    assert b'"a\\ud800"' in data
    with pytest.raises(EventDecodeError) as caught:
        decode(data.decode() if as_text else data)
    assert str(caught.value) == "not valid Unicode: it holds a lone surrogate ('\\ud800')"
    assert caught.value.kind == "invalid"
    assert caught.value.type_name == "SpaceSubmitted"

    values["values"] = ["\U0001f600", "\\ud800 as written"]  # a pair, and a backslash
    event = decode(_bytes(payload).decode() if as_text else _bytes(payload))
    assert event.spec.entity_space[0].values == ("\U0001f600", "\\ud800 as written")


@pytest.mark.parametrize(
    ("encoding", "message"),
    [
        ("utf-16-le", "not JSON: it is not UTF-8 (it holds a NUL byte: UTF-16 or UTF-32?)"),
        ("utf-32", "not JSON: it is not UTF-8 (it holds a NUL byte: UTF-16 or UTF-32?)"),
        ("raw-surrogate", "not JSON: it is not UTF-8 (invalid continuation byte at byte"),
    ],
)
def test_bytes_that_are_not_utf8_are_refused_as_malformed(
    payloads: Payloads, encoding: str, message: str
) -> None:
    """JSON's reader takes UTF-16, UTF-32 and a surrogate written raw (not escaped) into text
    that cannot be written out again: such an event was decoded, then failed every consumer
    that encoded or stored it (the projector's whole batch) instead of being dead-lettered."""
    payload = copy.deepcopy(_current(payloads, OperationCancelRequested))
    payload["reason"] = "bad \ud800 here" if encoding == "raw-surrogate" else "fine"
    text = json.dumps(payload, ensure_ascii=False)
    if encoding == "raw-surrogate":
        data = text.encode("utf-8", "surrogatepass")
        assert b"\xed\xa0\x80" in data
    else:
        data = text.encode(encoding)
    assert json.loads(data)["reason"] == payload["reason"]  # what JSON alone would accept
    with pytest.raises(EventDecodeError) as caught:
        decode(data)
    assert str(caught.value).startswith(message)
    assert caught.value.kind == "malformed"


@pytest.mark.parametrize(
    "where",
    ["range", "values", "parameterization"],
)
def test_a_space_holding_an_infinity_or_nan_cannot_be_built_as_an_event(
    payloads: Payloads, where: str
) -> None:
    """JSON has no infinity: the encoder wrote it as null, and the same codec then refused the
    event as invalid; it is refused where it is built, as an event's own numbers are."""
    payload = copy.deepcopy(_current(payloads, SpaceSubmitted))
    prop = {"name": "lr", "type": "continuous", "range": [0.0, 1.0]}
    if where == "range":
        prop["range"] = [0.0, float("inf")]
    elif where == "values":
        prop = {"name": "lr", "values": [1.0, float("nan")]}
    else:
        payload["spec"]["measurement_space"][0]["parameterization"] = {"eta": float("inf")}
    payload["spec"]["entity_space"] = [prop]
    with pytest.raises(ValidationError, match="finite number"):
        SpaceSubmitted.model_validate(payload)


def test_a_misspelt_parameter_is_refused_rather_than_ignored(payloads: Payloads) -> None:
    payload = _current(payloads, OperationRequested)
    payload["parameters"] = {**payload["parameters"], "batch_sise": 4}
    with pytest.raises(EventDecodeError, match=r"parameters\.batch_sise: Extra inputs"):
        decode(_bytes(payload))


def test_several_problems_are_counted_on_one_line(payloads: Payloads) -> None:
    payload = _current(payloads, OperationRequested)
    del payload["event_id"], payload["space_id"], payload["requested_by"]
    with pytest.raises(EventDecodeError) as caught:
        decode(_bytes(payload))
    message = str(caught.value)
    assert message.endswith("(and 2 other problems)")
    assert "\n" not in message


def test_a_version_newer_than_this_code_is_refused_as_unsupported(payloads: Payloads) -> None:
    payload = {**_current(payloads, MeasurementCompleted), "schema_version": 3}
    with pytest.raises(EventDecodeError, match="MeasurementCompleted v3 is newer") as caught:
        decode(_bytes(payload))
    assert caught.value.kind == "unsupported_version"


@pytest.mark.parametrize("version", [0, "1", True, None])
def test_a_schema_version_that_is_not_a_whole_number_from_1_is_malformed(
    payloads: Payloads, version: object
) -> None:
    payload = {**_current(payloads, MeasurementStarted), "schema_version": version}
    with pytest.raises(EventDecodeError, match="schema_version must be a whole number") as caught:
        decode(_bytes(payload))
    assert caught.value.kind == "malformed"


def test_an_old_version_without_an_upcaster_is_refused_as_unsupported(
    payloads: Payloads,
) -> None:
    payload = _current(payloads, MeasurementStarted)
    with pytest.raises(EventDecodeError, match="no upcaster from MeasurementStarted v0") as caught:
        upcast_payload(payload, MeasurementStarted, 0)
    assert caught.value.kind == "unsupported_version"


def test_an_old_payload_that_fails_after_upcasting_reports_the_version_it_was_written_in(
    payloads: Payloads,
) -> None:
    payload = dict(payloads[("MeasurementCompleted", 1)])
    payload["duration_seconds"] = -1
    with pytest.raises(EventDecodeError, match=r"^not a valid MeasurementCompleted v1: "):
        decode(_bytes(payload))


def test_decode_as_returns_the_event_when_it_is_one_of_the_expected_types(
    payloads: Payloads,
) -> None:
    data = _bytes(_current(payloads, MeasurementStarted))
    event = decode_as(data, MeasurementCompleted, MeasurementStarted)
    assert isinstance(event, MeasurementStarted)


def test_decode_as_refuses_a_valid_event_of_another_type(payloads: Payloads) -> None:
    data = _bytes(_current(payloads, MeasurementStarted))
    with pytest.raises(EventDecodeError) as caught:
        decode_as(data, OperationRequested)
    assert str(caught.value) == "expected OperationRequested, got MeasurementStarted"
    assert caught.value.kind == "unexpected_type"


def test_decode_accepts_text_as_well_as_bytes(payloads: Payloads) -> None:
    text = json.dumps(_current(payloads, MeasurementStarted))
    assert decode(text) == decode(text.encode())


POISON = {
    "nested 5,000 levels deep": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "a list nested 5,000 levels deep": b"[" * 5000 + b"]" * 5000,
    "a 5,000-digit number": b'{"type": "SpaceSubmitted", "n": 1' + b"1" * 5000 + b"}",
    "a 5,000-digit schema version": b'{"type": "SpaceSubmitted", "schema_version": 1'
    + b"0" * 5000
    + b"}",
    "invalid UTF-8": b'{"type": "\xc3\x28"}',
}


@pytest.mark.parametrize("data", POISON.values(), ids=list(POISON))
def test_whatever_json_cannot_read_is_a_decode_error_never_another_exception(data: bytes) -> None:
    with pytest.raises(EventDecodeError, match=r"^not JSON: ") as caught:
        decode(data)
    assert caught.value.kind == "malformed"
    assert len(caught.value.reason) < 300


def test_a_decode_error_reason_quoting_a_huge_input_is_kept_short() -> None:
    with pytest.raises(EventDecodeError) as caught:
        decode(_bytes({"type": "x" * 100_000, "schema_version": 1}))
    assert caught.value.kind == "unknown_type"
    assert len(caught.value.reason) <= 500


def test_a_message_as_encode_writes_it_is_read_in_one_pass_to_the_event_the_general_way_reads(
    event_class: Any, payloads: Payloads
) -> None:
    event = event_class.model_validate(_current(payloads, event_class))
    written = encode(event)
    one_pass = codec._as_written(written)
    reformatted = json.dumps(json.loads(written), indent=1).encode()  # not the written form

    assert codec._as_written(reformatted) is None
    assert one_pass is not None
    assert type(one_pass) is event_class
    assert one_pass == decode(reformatted) == event
    assert one_pass.model_dump_json() == event.model_dump_json()


def test_written_type_names_the_class_of_a_current_event_from_its_first_bytes(
    event_class: Any, payloads: Payloads
) -> None:
    written = encode(event_class.model_validate(_current(payloads, event_class)))
    reformatted = json.dumps(json.loads(written), indent=1).encode()

    assert written_type(written) is event_class
    assert written_type(reformatted) is None  # not the written form: read the general way
    assert written_type(written.decode()) is None


def test_written_type_reads_only_the_start_and_knows_no_type_or_version_it_cannot_read() -> None:
    assert written_type(WRITTEN + b"not JSON at all") is MeasurementStarted
    assert written_type(WRITTEN.replace(b"MeasurementStarted", b"Nope")) is None
    newer = WRITTEN.replace(b'"schema_version":1', b'"schema_version":7')
    assert written_type(newer) is None
    assert written_type(None) is None


WRITTEN = b'{"event_id":"e-1","type":"MeasurementStarted","schema_version":1,'
WRITTEN_BUT_BAD = {
    "a 5,000-digit attempt": WRITTEN + b'"attempt":1' + b"1" * 5000 + b"}",
    "invalid UTF-8": WRITTEN + b'"worker_id":"\xc3\x28"}',
    "nested 5,000 levels deep": WRITTEN
    + b'"entity_values":'
    + b'{"a":' * 5000
    + b"1"
    + b"}" * 5001,
    "a second type": WRITTEN + b'"type":"OperationRequested"}',
    "an older version said again": WRITTEN.replace(b"MeasurementStarted", b"MeasurementCompleted")
    + b'"schema_version":1}',
    "a newer version": WRITTEN.replace(b'"schema_version":1', b'"schema_version":7') + b"}",
    "an unknown type": WRITTEN.replace(b"MeasurementStarted", b"Nope") + b"}",
    "fields missing": WRITTEN + b'"attempt":1}',
    "trailing bytes": WRITTEN + b'"attempt":1} x',
}


@pytest.mark.parametrize("data", WRITTEN_BUT_BAD.values(), ids=list(WRITTEN_BUT_BAD))
def test_a_bad_message_in_the_written_form_gets_the_general_way_s_error(
    data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(EventDecodeError) as one_pass:
        decode(data)
    monkeypatch.setattr(codec, "_as_written", lambda data: None)
    with pytest.raises(EventDecodeError) as general:
        decode(data)

    assert (one_pass.value.reason, one_pass.value.kind) == (
        general.value.reason,
        general.value.kind,
    )


def test_an_event_written_without_a_correlation_id_is_read_correlated_with_its_conversation(
    payloads: Payloads,
) -> None:
    for cls, conversation in (
        (OperationRequested, "operation_id"),
        (SpaceSubmitted, "submission_id"),
    ):
        payload = _current(payloads, cls)
        payload.pop("correlation_id", None)
        as_written = json.loads(encode(cls.model_validate(payload)))
        del as_written["correlation_id"]
        written = json.dumps(as_written, separators=(",", ":")).encode()
        general = _bytes(payload)  # not as encode writes it: read the general way

        assert codec._as_written(written) is not None
        assert codec._as_written(general) is None

        for event in (decode(written), decode(general), cls.model_validate(payload)):
            assert event.correlation_id == payload[conversation]
            assert "correlation_id" in event.model_fields_set
            assert json.loads(encode(event))["correlation_id"] == payload[conversation]


def _reason(payload: dict[str, Any]) -> str:
    with pytest.raises(EventDecodeError) as refused:
        decode(json.dumps(payload, allow_nan=True))
    return str(refused.value)


@pytest.mark.parametrize("value", [float("nan"), None, [1, 2]], ids=["nan", "null", "list"])
def test_a_value_no_kind_of_a_union_takes_is_one_problem_at_its_own_path(
    payloads: dict[tuple[str, int], dict[str, Any]], value: object
) -> None:
    """It read 'values.x.bool: Input should be a valid boolean (and 3 other problems)': a
    member's tag in the path, and the wrong problem named."""
    payload = copy.deepcopy(payloads[("MeasurementCompleted", 2)])
    payload["values"]["x"] = value

    reason = _reason(payload)

    assert ": values.x: no kind it takes fits (Input should be a valid boolean / " in reason
    assert "other problem" not in reason


def test_two_problems_of_two_fields_are_not_read_as_one(
    payloads: dict[tuple[str, int], dict[str, Any]],
) -> None:
    payload = copy.deepcopy(payloads[("OperationCancelRequested", 1)])
    del payload["operation_id"]
    payload["requested_by"] = 5

    assert _reason(payload).endswith(": operation_id: Field required (and 1 other problem)")


def test_a_key_with_control_characters_is_quoted_in_the_reason(
    payloads: dict[tuple[str, int], dict[str, Any]],
) -> None:
    """A dead letter's reason and the logs held a raw newline and an ESC from the payload."""
    payload = copy.deepcopy(payloads[("MeasurementCompleted", 2)])
    payload["values"]["tps\nERROR forged\x1b[31m"] = [1]

    reason = _reason(payload)

    assert "\n" not in reason
    assert "\x1b" not in reason
    assert "values.'tps\\nERROR forged\\x1b[31m': " in reason
