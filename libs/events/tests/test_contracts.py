"""The contracts as other languages see them: names, documentation and JSON Schemas."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from discospace.events import all_event_types, event_type, json_schemas
from discospace.events.envelope import Record
from discospace.events.event_types import UnknownEventTypeError

Payloads = dict[tuple[str, int], dict[str, Any]]
Schemas = dict[str, dict[str, Any]]
DRAFT = jsonschema.Draft202012Validator


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return json_schemas()


def _own_models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    """`model` and every model of this package it holds, however deeply."""
    if model in seen or not issubclass(model, Record):
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        for candidate in _models_in(field.annotation):
            _own_models(candidate, seen)
    return seen


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in getattr(annotation, "__args__", ()) for model in _models_in(arg)]


def test_every_type_name_is_its_class_name_in_the_past_tense(event_class: Any) -> None:
    name = event_class.type_name()
    assert name == event_class.__name__
    assert name.endswith(("ed", "wn"))  # a past participle: Requested, Drawn
    assert event_type(name) is event_class


def test_an_unknown_type_name_is_a_lookup_error() -> None:
    with pytest.raises(UnknownEventTypeError, match="unknown event type 'Nope'"):
        event_type("Nope")


def test_every_field_of_every_event_is_described_with_examples(event_class: Any) -> None:
    undocumented = [
        f"{model.__name__}.{name}"
        for model in _own_models(event_class, set())
        for name, field in model.model_fields.items()
        if not field.description or not field.examples
    ]
    assert undocumented == []


def test_there_is_one_json_schema_per_event_type_named_with_its_version() -> None:
    schemas = json_schemas()
    assert list(schemas) == [cls.type_name() for cls in all_event_types()]
    completed = schemas["MeasurementCompleted"]
    assert completed["$id"] == "urn:discospace:event:MeasurementCompleted:v2"
    assert completed["title"] == "MeasurementCompleted v2"
    assert completed["properties"]["schema_version"]["const"] == 2
    assert len({schema["$id"] for schema in schemas.values()}) == len(schemas)


def test_every_json_schema_is_a_valid_draft_2020_12_schema(
    event_class: Any, schemas: Schemas
) -> None:
    jsonschema.Draft202012Validator.check_schema(schemas[event_class.type_name()])


def test_writers_outside_python_must_set_the_type_and_version(
    event_class: Any, schemas: Schemas
) -> None:
    required = schemas[event_class.type_name()]["required"]
    assert {"event_id", "type", "schema_version", "occurred_at"} <= set(required)


def test_the_stored_current_payload_matches_the_published_json_schema(
    event_class: Any, payloads: Payloads, schemas: Schemas
) -> None:
    schema = schemas[event_class.type_name()]
    payload = payloads[(event_class.type_name(), event_class.current_version())]
    jsonschema.validate(payload, schema, cls=DRAFT)


def test_the_published_json_schema_refuses_what_the_model_refuses(
    event_class: Any, payloads: Payloads, schemas: Schemas
) -> None:
    schema = schemas[event_class.type_name()]
    payload = payloads[(event_class.type_name(), event_class.current_version())]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**payload, "surprise": 1}, schema, cls=DRAFT)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**payload, "type": "Other"}, schema, cls=DRAFT)


def test_the_json_schemas_are_plain_json_and_stable_between_calls() -> None:
    first = json.dumps(json_schemas(), sort_keys=True)
    assert first == json.dumps(json_schemas(), sort_keys=True)


@pytest.mark.parametrize("type_name", ["ActuatorRegistered", "MeasurementRequested"])
def test_the_published_json_schema_refuses_a_pool_that_names_no_topic(
    type_name: str, payloads: Payloads, schemas: Schemas
) -> None:
    """A producer following `proto/` had every announcement with such a pool dead-lettered."""
    event_class = event_type(type_name)
    payload = payloads[(type_name, event_class.current_version())]
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        jsonschema.validate({**payload, "pool": "Bad Pool/.."}, schemas[type_name], cls=DRAFT)
    with pytest.raises(ValueError, match="must be letters, digits"):
        event_class.model_validate({**payload, "pool": "Bad Pool/.."})
