"""A broker outage writes a bounded number of log lines: the registry, as a process on a broker
of its own, while that broker is stopped for 20 s and started again.

Before the runtime held repeated warnings and errors back (`logs.RepeatFilter`), one service
wrote 5,780 lines in such an outage (aiokafka's "Unable connect to node", "Unable to update
metadata", "Failed fetch messages", ...); now each kind is written at most once per 10 s, and
the lines written say how many like them were left out (those still held when the service
stops are written as it exits).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from discospace.events import TopicNames
from discospace.testing.chaos import OwnBroker
from discospace.testing.kafka import free_port
from discospace.testing.loop import ServiceProcess

pytestmark = pytest.mark.integration

OUTAGE_S = 20
MAX_LINES = 150
"""About 10 kinds of warning and error, each at most once per 10 s, over 20 s and the broker's
stop and start (about 30 s more); 5,780 lines before."""
MIN_LEFT_OUT = 10 * OUTAGE_S
"""aiokafka retries every `retry_backoff_ms` (100 ms) in each of its loops (metadata, the group
coordinator, each connection): over 40 a second from the registry (about 800 in 20 s), so at
least 10 a second must have been held back for the outage to have exercised the filter."""


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[OwnBroker]:
    broker = OwnBroker(tmp_path / "kafka")
    broker.run("start")
    yield broker
    broker.run("stop")


def _lines(log: Path, start: int = 0) -> list[dict[str, Any]]:
    """The JSON log lines of `log` from line `start` on (anything else counts too)."""
    lines = log.read_text(errors="replace").splitlines()[start:]
    return [json.loads(line) if line.startswith("{") else {"raw": line} for line in lines]


def test_a_twenty_second_broker_outage_writes_a_bounded_number_of_log_lines(
    own_broker: OwnBroker, tmp_path: Path
) -> None:
    port = free_port()
    env = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": own_broker.bootstrap,
        "DISCOSPACE_TOPIC_PREFIX": TopicNames.unique("outage").prefix,
        "DISCOSPACE_REGISTRY_HTTP_PORT": str(port),
    }
    registry = ServiceProcess("registry", "registry", port, env, tmp_path / "registry.log")
    registry.start()
    try:
        registry.wait_healthy()
        before = len(_lines(registry.log_path))
        own_broker.run("stop")
        time.sleep(OUTAGE_S)
        during = registry.get("/health")[0]
        own_broker.run("start")
        registry.wait_healthy(timeout_s=120)
        time.sleep(5)
    finally:
        registry.terminate()
    written = _lines(registry.log_path, before)

    left_out = sum(int(line.get("repeated", 0)) for line in written)
    assert during == 503
    assert len(written) <= MAX_LINES, "\n".join(map(str, written[:200]))
    assert left_out >= MIN_LEFT_OUT, "the outage did not make aiokafka repeat itself"
    assert any(str(line.get("logger")).startswith("aiokafka") for line in written)
