"""Wiring: handlers say which events they take; publishers send only what they declared."""

from __future__ import annotations

import inspect

import httpx
import pytest

from discospace.events import DeadLettered, SpaceRegistered, SpaceRejected, new_event
from discospace.runtime import ServiceSettings, WiringError, bind, create_service
from discospace.runtime.consuming import event_types_of


async def on_space(event: SpaceRegistered | SpaceRejected) -> None: ...


async def on_anything(event: dict) -> None: ...


def test_the_event_types_of_a_handler_come_from_its_first_parameter():
    assert event_types_of(on_space) == (SpaceRegistered, SpaceRejected)


def test_a_handler_that_does_not_name_event_classes_is_refused():
    with pytest.raises(WiringError, match="on_anything: annotate the first parameter"):
        event_types_of(on_anything)


async def test_a_publisher_refuses_an_event_type_it_did_not_declare(topics, make_announcement):
    service = create_service(ServiceSettings(topic_prefix=topics.prefix), description="x")
    to_spaces = service.publisher(topics.spaces, SpaceRegistered)
    with pytest.raises(TypeError, match="takes SpaceRegistered, not ActuatorRegistered"):
        await to_spaces(make_announcement())


def test_every_service_declares_the_dead_letter_topic_in_its_contract(topics):
    service = create_service(ServiceSettings(topic_prefix=topics.prefix), description="x")
    document = service.app.schema.to_specification().to_jsonable()
    channel = document["channels"][f"{topics.dead_letter}:to_dead_letter"]
    assert channel["address"] == topics.dead_letter
    assert DeadLettered.type_name() in document["components"]["schemas"]


async def test_health_is_503_without_a_broker_and_metrics_list_consumed_topics_at_once(topics):
    settings = ServiceSettings(topic_prefix=topics.prefix, health_timeout_s=0.2)
    service = create_service(settings, description="x")
    service.consumer(topics.spaces)(on_space)
    transport = httpx.ASGITransport(app=service.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
        health = await client.get("/health")
        metrics = await client.get("/metrics")
    assert health.status_code == 503
    assert health.json() == {"service": "service", "status": "unavailable", "kafka": "unreachable"}
    assert metrics.status_code == 200
    assert 'discospace_service_info{service="service"} 1.0' in metrics.text
    consumed = f'app_name="service",broker="kafka",handler="{topics.spaces}"'
    assert f"faststream_received_messages_total{{{consumed}}} 0.0" in metrics.text


def test_a_replaying_consumer_has_no_group_and_a_group_consumer_has_the_services(topics):
    service = create_service(ServiceSettings(topic_prefix=topics.prefix), description="x")
    replaying = service.consumer(topics.actuators, replay=True)
    grouped = service.consumer(topics.spaces)
    assert replaying.subscriber.group_id is None
    assert grouped.subscriber.group_id == f"{topics.prefix}.service"


def test_a_consumer_whose_handler_runs_long_gets_a_longer_max_poll_interval(topics):
    service = create_service(ServiceSettings(topic_prefix=topics.prefix), description="x")
    patient = service.consumer(topics.spaces, max_poll_interval_ms=3_720_000)
    default = service.consumer(topics.actuators)

    options = [c.subscriber._connection_args["max_poll_interval_ms"] for c in (patient, default)]

    assert options == [3_720_000, 300_000]


async def on_space_with_parts(event: SpaceRegistered | SpaceRejected, parts: list) -> None:
    parts.append(event)


async def test_a_handler_of_the_event_and_its_parts_is_bound_to_the_parts(topics):
    parts: list = []
    bound = bind(on_space_with_parts, parts)
    event = new_event(SpaceRejected, submission_id="s", space_id=None, reason="no")

    await bound(event)

    assert event_types_of(bound) == (SpaceRegistered, SpaceRejected)
    assert list(inspect.signature(bound).parameters) == ["event"]
    assert bound.__name__ == "on_space_with_parts"
    assert parts == [event]


async def test_an_unknown_path_and_a_write_to_metrics_are_json_sentences(topics) -> None:
    """FastStream answered an unknown path in plain text ("Application doesn't support regular
    HTTP protocol.") and POST /health too ("Method Not Allowed"); prometheus_client answered
    POST /metrics with the metrics (200)."""
    settings = ServiceSettings(kafka_bootstrap_servers="127.0.0.1:9", topic_prefix=topics.prefix)
    service = create_service(settings, description="x")
    transport = httpx.ASGITransport(app=service.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
        unknown = await client.get("/nope")
        head = await client.head("/nope")
        posted = await client.post("/metrics", content=b"x")
        deleted = await client.delete("/metrics")
        health_posted = await client.post("/health", content=b"x")
        read = await client.get("/metrics")

    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/json"
    assert unknown.json() == {
        "error": "nothing is served at this path; the paths are /health, /metrics."
    }
    assert (head.status_code, head.content) == (404, b"")
    for refused, method in ((posted, "POST"), (deleted, "DELETE"), (health_posted, "POST")):
        assert refused.status_code == 405
        assert refused.headers["allow"] == "GET, HEAD"
        assert refused.json() == {"error": f"{method} is not allowed here: use GET."}
    assert read.status_code == 200
    assert "discospace_service_info" in read.text
