"""Events on the wire: JSON bytes out, the right event class back in, old versions upcast.

`decode` never lets a pydantic or JSON traceback through: whatever is wrong with a message
becomes one `EventDecodeError` whose message is a single sentence, fit for a dead letter or
a person, and whose `kind` says which of the ways it went wrong. That holds for every exception
reading raises (JSON nested too deep for the parser, a number with more digits than Python
converts, an upcaster or a validator that fails in an unforeseen way), so no message can make
a consumer fail on it forever. The sentence is kept short (`MAX_REASON_CHARS`) even when it
quotes the message.

A message as `encode` writes it, at the current version of its type (nearly every message),
is read in one pass: its type and version are read from the start of the bytes, where
`encode` puts them (`event_id`, `type`, `schema_version` first), and pydantic parses and
validates the whole in Rust (`model_validate_json`), about a third of the time of parsing to
Python objects and validating those. Its class's `Literal` type and version fields then check
them again. Anything else, or anything that fails there, is read the general way below, which
decides the outcome (the error and its sentence included), so both ways give the same event.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from discospace.events.envelope import (
    MAX_MESSAGE_BYTES,
    Event,
    event_message_size,
    shortened,
)
from discospace.events.event_types import UnknownEventTypeError, event_type
from discospace.events.upcasting import MissingUpcasterError, upcast

E = TypeVar("E", bound=Event)


DecodeErrorKind = Literal[
    "malformed", "unknown_type", "unsupported_version", "invalid", "unexpected_type"
]


class EventDecodeError(ValueError):
    """A message that is not an event this code can read, with the reason in one sentence.

    `kind`: malformed (not a JSON object), unknown_type, unsupported_version (newer than this
    code, or no way to upcast it), invalid (fails the schema of its type and version), or
    unexpected_type (a valid event, but not one `decode_as` was asked for).
    """

    def __init__(
        self,
        reason: str,
        kind: DecodeErrorKind,
        type_name: str | None = None,
        schema_version: int | None = None,
    ) -> None:
        reason = shortened(reason)
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.type_name = type_name
        self.schema_version = schema_version


class EventTooLargeError(ValueError):
    """An event whose message would be larger than the message size limit: refused where it
    is produced, with the sizes in one sentence."""

    def __init__(self, event: Event, size: int, limit: int) -> None:
        super().__init__(
            f"{event.type} {event.event_id} is {size} bytes as a message, over the "
            f"{limit}-byte message limit; it was not sent"
        )
        self.size = size
        self.limit = limit


def encode(event: Event) -> bytes:
    """The event as UTF-8 JSON: the exact form its JSON Schema describes."""
    return event.model_dump_json().encode()


def encode_within(event: Event, max_message_bytes: int = MAX_MESSAGE_BYTES) -> bytes:
    """`encode(event)`, or `EventTooLargeError` when its message would not fit the limit."""
    value = encode(event)
    size = event_message_size(event, value)
    if size > max_message_bytes:
        raise EventTooLargeError(event, size, max_message_bytes)
    return value


def decode(data: bytes | str) -> Event:
    """The event in `data`, upcast to the current version of its type.

    Raises `EventDecodeError` when `data` is not JSON, names no known type, carries a version
    this code cannot read, or fails the schema, and for whatever else goes wrong reading it.
    """
    return decode_verbatim(data)[0]


def decode_verbatim(data: bytes | str) -> tuple[Event, bool]:
    """`decode(data)`, and whether `data` holds the event verbatim: at the current version of
    its type, so nothing was upcast and `data` may stand for the event where its JSON is kept
    (the store's raw log keeps what was read rather than writing the event out again)."""
    if isinstance(data, bytes):
        _check_utf8(data)
    try:
        decoded = _decode(data)
    except EventDecodeError:
        raise
    except Exception as error:  # any failure to read a message is a decode error
        raise EventDecodeError(
            f"unreadable: reading it raised {type(error).__name__}: {error}", "malformed"
        ) from None
    _check_unicode(data, decoded[0])
    return decoded


def _check_utf8(data: bytes) -> None:
    """Refuse bytes that are not UTF-8: JSON's reader would take UTF-16 or UTF-32 (found by
    their NUL bytes) and raw UTF-8 surrogates (which strict UTF-8 refuses) as text that could
    be neither written out again nor stored."""
    if b"\x00" in data:  # never in UTF-8 JSON: a NUL in a string is written \u0000
        raise EventDecodeError(
            "not JSON: it is not UTF-8 (it holds a NUL byte: UTF-16 or UTF-32?)", "malformed"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EventDecodeError(
            f"not JSON: it is not UTF-8 ({error.reason} at byte {error.start}: "
            f"{data[error.start : error.start + 4]!r})",
            "malformed",
        ) from None


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: half of a pair (an emoji), or a lone one."""
_SURROGATE_IN_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
"""The same in text, or a surrogate itself."""


def _check_unicode(data: bytes | str, event: Event) -> None:
    """Refuse an event holding a lone surrogate (`"\\ud800"` in its JSON): JSON and pydantic
    read it into a string that UTF-8 cannot encode, so the event could be neither written out
    again, stored nor hashed, and each consumer would fail on it somewhere else. The event is
    read again only when its bytes hold a surrogate escape at all."""
    pattern = _SURROGATE_ESCAPE if isinstance(data, bytes) else _SURROGATE_IN_TEXT
    if pattern.search(data) is None:  # type: ignore[arg-type]
        return
    try:
        json.dumps(json.loads(data), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        raise EventDecodeError(
            f"not valid Unicode: it holds a lone surrogate ({error.object[error.start]!r})",
            "invalid",
            event.type,
            event.schema_version,
        ) from None


_AS_WRITTEN = re.compile(
    rb'\{"event_id":"[^"\\]*","type":"([A-Za-z0-9_]{1,100})","schema_version":([1-9][0-9]{0,8}),'
)
"""The start of a message as `encode` writes it: the type and the version are top-level keys."""


def written_type(data: bytes | str | None) -> type[Event] | None:
    """The event class `data` names when it starts as `encode` writes an event at its type's
    current version, from its first bytes alone (nothing else is read or validated); None
    otherwise. A consumer uses it to tell at a glance the events none of its handlers take."""
    if not isinstance(data, bytes):
        return None
    match = _AS_WRITTEN.match(data)
    if match is None:
        return None
    try:
        cls = event_type(match[1].decode("ascii"))
    except UnknownEventTypeError:
        return None
    return cls if int(match[2]) == _name_and_version(cls)[1] else None


def _as_written(data: bytes | str) -> Event | None:
    """The event in `data` when it is as `encode` writes a current event, read in one pass;
    None otherwise (the general way then reads it, or says what is wrong with it)."""
    cls = written_type(data)
    if cls is None:
        return None
    try:
        return cls.model_validate_json(data)
    except Exception:  # the general way decides what is wrong, with its sentence
        return None


def _decode(data: bytes | str) -> tuple[Event, bool]:
    """The event, and whether `data` was at its type's current version."""
    event = _as_written(data)
    if event is not None:
        return event, True
    payload = _json_object(data)
    cls = _event_class(payload)
    version = _version(payload, cls)
    current = upcast_payload(payload, cls, version)
    try:
        return cls.model_validate(current), version == _name_and_version(cls)[1]
    except ValidationError as error:
        name = _name_and_version(cls)[0]
        raise EventDecodeError(
            f"not a valid {name} v{version}: {describe_validation_error(error)}",
            "invalid",
            name,
            version,
        ) from None


def decode_as(data: bytes | str, *types: type[E]) -> E:
    """Like `decode`, but the event must be an instance of one of `types`."""
    event = decode(data)
    if isinstance(event, types):
        return event
    expected = " or ".join(cls.type_name() for cls in types)
    raise EventDecodeError(
        f"expected {expected}, got {event.type}",
        "unexpected_type",
        event.type,
        event.schema_version,
    )


_NAMES_AND_VERSIONS: dict[type[Event], tuple[str, int]] = {}


def _name_and_version(cls: type[Event]) -> tuple[str, int]:
    """`cls`'s type name and current version, looked up once per class: reading them from
    pydantic's field defaults cost about a sixth of decoding a small event."""
    known = _NAMES_AND_VERSIONS.get(cls)
    if known is None:
        known = _NAMES_AND_VERSIONS[cls] = (cls.type_name(), cls.current_version())
    return known


def upcast_payload(payload: dict[str, Any], cls: type[Event], version: int) -> dict[str, Any]:
    """`payload` rewritten from `version` to the current version of `cls`."""
    name, current = _name_and_version(cls)
    if version == current:
        return payload
    try:
        return upcast(payload, name, version, current)
    except MissingUpcasterError as error:
        raise EventDecodeError(
            f"cannot read {name} v{version}: {error}", "unsupported_version", name, version
        ) from None
    except (KeyError, TypeError, ValueError) as error:
        raise EventDecodeError(
            f"not a valid {name} v{version}: upcasting failed on {error!r}",
            "invalid",
            name,
            version,
        ) from None


def describe_validation_error(error: ValidationError) -> str:
    """`field.path: problem`, and how many other problems there are, on one line.

    A value a union refused gives one problem per member, each at a path ending in the
    member's tag (`values.x.bool`, `number_entities.constrained-int`): they are one problem, at
    the value's own path, saying every kind it is not. A key of the payload is written as a
    Python string literal when it holds control characters (a newline, an ESC), so the reason
    stays one line of plain text."""
    problems = error.errors(include_url=False)
    first = problems[0]
    loc = tuple(first["loc"])
    members = [p for p in problems if _member_of(p, first)]
    if len(members) > 1:
        where = _path(loc[:-1])
        kinds = " / ".join(dict.fromkeys(str(p["msg"]) for p in members))
        text = f"{where}: no kind it takes fits ({kinds})"
        others = len(problems) - len(members)
    else:
        text = f"{_path(loc)}: {first['msg']}"
        others = len(problems) - 1
    if others:
        text += f" (and {others} other problem{'s' if others > 1 else ''})"
    return text


_UNION_TAG = re.compile(r"(bool|int|float|str|bytes|none|list|dict|tuple|decimal)$|.*[\[-].*")
"""How pydantic names a union's member in an error's path: a type, or a tag such as
`constrained-int` or `literal['all']` (a field or key named so is rare)."""


def _member_of(problem: Any, first: Any) -> bool:
    """Whether `problem` is another union member's refusal of the value `first` is about: the
    same path but its last step, a member's tag, and the very same input object."""
    loc, other = tuple(first["loc"]), tuple(problem["loc"])
    tags = (loc[-1], other[-1]) if loc and other else ()
    return (
        len(loc) > 1
        and len(other) == len(loc)
        and other[:-1] == loc[:-1]
        and all(isinstance(tag, str) and _UNION_TAG.fullmatch(tag) for tag in tags)
        and problem.get("input") is first.get("input")
    )


def _path(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as `a.b.0.c`; "message" for the whole payload."""
    shown = (repr(part) if isinstance(part, str) and not part.isprintable() else str(part)
             for part in loc)  # fmt: skip
    return ".".join(shown) or "message"


def _json_object(data: bytes | str) -> dict[str, Any]:
    try:
        payload = json.loads(data)
    except RecursionError:
        raise EventDecodeError("not JSON: nested too deeply to read", "malformed") from None
    except ValueError as error:  # not UTF-8, not JSON, a number of over 4300 digits
        raise EventDecodeError(f"not JSON: {error}", "malformed") from None
    if not isinstance(payload, dict):
        raise EventDecodeError(
            f"not an event: a JSON object is expected, got {type(payload).__name__}", "malformed"
        )
    return payload


def _event_class(payload: dict[str, Any]) -> type[Event]:
    name = payload.get("type")
    if not isinstance(name, str):
        raise EventDecodeError("not an event: it has no 'type' naming its event type", "malformed")
    try:
        return event_type(name)
    except UnknownEventTypeError:
        raise EventDecodeError(f"unknown event type {name!r}", "unknown_type", name) from None


def _version(payload: dict[str, Any], cls: type[Event]) -> int:
    (name, current), version = _name_and_version(cls), payload.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise EventDecodeError(
            f"not a valid {name}: schema_version must be a whole number from 1", "malformed", name
        )
    if version > current:
        raise EventDecodeError(
            f"{name} v{version} is newer than this code reads (v{current})",
            "unsupported_version",
            name,
            version,
        )
    return version
