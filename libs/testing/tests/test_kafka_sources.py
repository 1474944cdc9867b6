"""How the Kafka fixture chooses a broker, and the names it gives topics (no broker needed)."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from discospace.testing.kafka import (
    BrokerUnavailableError,
    KafkaBroker,
    broker_from_env,
    find_broker,
    find_script,
    unique_topic_name,
)

LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def _unavailable(reason: str) -> Callable[[], KafkaBroker]:
    def source() -> KafkaBroker:
        raise BrokerUnavailableError(reason)

    return source


def _broker(servers: str) -> Callable[[], KafkaBroker]:
    return lambda: KafkaBroker(servers, "fake", lambda: None)


def test_the_first_source_that_gives_a_broker_wins_and_later_ones_are_not_tried() -> None:
    tried: list[str] = []

    def later() -> KafkaBroker:
        tried.append("later")
        return KafkaBroker("later:9092", "later", lambda: None)

    broker = find_broker([_unavailable("not set"), _broker("a:1"), later])

    assert broker.bootstrap_servers == "a:1"
    assert tried == []


def test_when_no_source_gives_a_broker_the_error_names_every_reason() -> None:
    with pytest.raises(BrokerUnavailableError) as raised:
        find_broker([_unavailable("not set"), _unavailable("no engine")])

    assert str(raised.value) == "not set; no engine"


def test_an_unset_or_blank_bootstrap_variable_is_not_a_broker() -> None:
    for value in (None, "", "  "):
        with pytest.raises(BrokerUnavailableError, match="is not set"):
            broker_from_env(value)


def test_a_bootstrap_variable_pointing_at_a_closed_port_is_refused_with_its_value() -> None:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{sock.getsockname()[1]}"

    with pytest.raises(BrokerUnavailableError, match=re.escape(closed)):
        broker_from_env(closed)


def test_a_bootstrap_variable_pointing_at_a_listening_port_is_used_as_is() -> None:
    with closing(socket.socket()) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"

        broker = broker_from_env(f" {address} ")

    assert broker.bootstrap_servers == address


def test_the_broker_script_is_found_under_the_first_root_that_has_it(tmp_path: Path) -> None:
    script = tmp_path / "repo" / "deploy" / "local" / "kafka.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")

    assert find_script([tmp_path / "elsewhere", tmp_path / "repo"]) == script
    with pytest.raises(BrokerUnavailableError, match="was not found"):
        find_script([tmp_path / "elsewhere"])


def test_topic_names_are_unique_legal_and_carry_their_prefix() -> None:
    names = {unique_topic_name("dlq", "test_something[param 1/2]") for _ in range(1000)}

    assert len(names) == 1000
    assert all(LEGAL_TOPIC.fullmatch(name) for name in names)
    assert all(name.startswith("dlq.test_something-param-1-2.") for name in names)


def test_the_fresh_topic_fixture_tags_names_with_the_test_and_never_repeats(
    fresh_topic: Callable[..., str], topic_name: str
) -> None:
    first, second = fresh_topic("events"), fresh_topic("events")

    assert first != second != topic_name
    assert first.startswith("events.test_the_fresh_topic_fixture_tags_names")
    assert topic_name.startswith("test.test_the_fresh_topic_fixture")
