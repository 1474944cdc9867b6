"""proto/: generated deterministically, checked without writing, current in the repository."""

from __future__ import annotations

import json
from pathlib import Path

from discospace.events import all_event_types
from discospace.runtime.contracts import SERVICES, differences, generate, main, write

REPO = Path(__file__).resolve().parents[3]


def test_generating_twice_gives_the_same_text():
    assert generate() == generate()


def test_there_is_a_schema_for_every_event_and_a_document_for_every_service():
    documents = generate()
    for cls in all_event_types():
        assert f"events/{cls.type_name()}.v{cls.current_version()}.json" in documents
    for service in SERVICES:
        document = json.loads(documents[f"asyncapi/{service}.json"])
        assert document["asyncapi"].startswith("3.")
        assert document["info"]["title"] == f"discospace {service}"


def test_check_lists_what_is_missing_changed_or_stale_and_writes_nothing(tmp_path, capsys):
    write(tmp_path, generate())
    (tmp_path / "events" / "SpaceSubmitted.v1.json").write_text("{}\n")
    (tmp_path / "events" / "Retired.v1.json").write_text("{}\n")
    (tmp_path / "asyncapi" / "registry.json").unlink()

    assert main([str(tmp_path), "--check"]) == 1

    errors = capsys.readouterr().err
    assert f"differs: {tmp_path / 'events' / 'SpaceSubmitted.v1.json'}" in errors
    assert f"stale: {tmp_path / 'events' / 'Retired.v1.json'}" in errors
    assert f"missing: {tmp_path / 'asyncapi' / 'registry.json'}" in errors
    assert not (tmp_path / "asyncapi" / "registry.json").exists()


def test_the_schema_of_a_past_event_version_is_kept(tmp_path):
    upgraded = next(cls for cls in all_event_types() if cls.current_version() > 1)
    documents = generate()
    write(tmp_path, documents)
    past = tmp_path / "events" / f"{upgraded.type_name()}.v1.json"
    past.write_text("{}\n")
    assert differences(tmp_path, documents) == []
    write(tmp_path, documents)
    assert past.exists()


def test_regenerating_repairs_what_check_found(tmp_path):
    write(tmp_path, generate())
    (tmp_path / "events" / "SpaceSubmitted.v1.json").write_text("{}\n")
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path), "--check"]) == 0


def test_the_committed_proto_directory_is_current():
    assert differences(REPO / "proto", generate()) == [], "run `make schemas`"


def test_every_message_of_every_asyncapi_document_requires_type_and_schema_version():
    """The AsyncAPI schemas took an event without them (pydantic gives both defaults), which
    every consumer then dead-letters: 'not an event: it has no type'."""
    from discospace.runtime.contracts import asyncapi_document

    for service in SERVICES:
        schemas = asyncapi_document(service)["components"]["schemas"]
        events = {
            name: schema
            for name, schema in schemas.items()
            if "event_id" in schema.get("properties", {})
        }
        assert events, service
        for name, schema in events.items():
            assert schema["required"][:2] == ["type", "schema_version"], (service, name)


def test_the_documents_do_not_depend_on_the_shells_kafka_login(monkeypatch):
    """A shell holding a principal's credentials (the README's `. cli.env`) wrote a secure
    server into every document; a half-set one raised KafkaSecurityError."""
    plain = generate()
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "cli")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "secret-password")

    assert generate() == plain
    monkeypatch.delenv("KAFKA_SASL_PASSWORD")
    assert generate() == plain
