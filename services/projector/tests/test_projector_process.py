"""The projector as a process (`python -m discospace.projector`), killed with SIGKILL mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from discospace.core import DiscoverySpace, PropertySpec
from discospace.events import (
    Event,
    MeasurementCompleted,
    TopicNames,
    measurement_request_id,
)
from discospace.testing.clients import EventClient
from discospace.testing.kafka import free_port

pytestmark = pytest.mark.integration

ENTITIES = 2000
REPO_ROOT = Path(__file__).resolve().parents[3]


def _history(history: Any, make_spec: Any) -> tuple[str, list[Event]]:
    """A space of 2000 entities and an operation that measured every one of them."""
    spec = make_spec(
        entity_space=(
            PropertySpec(name="model_name", values=("llama-7b", "granite-8b")),
            PropertySpec(name="batch_size", values=tuple(range(1, 101))),
            PropertySpec(name="number_gpus", values=tuple(range(1, 11))),
        )
    )
    space = history.register(spec)
    operation = history.start(space, "op-big", number_entities="all")
    for index, entity in enumerate(DiscoverySpace.from_spec(spec).entity_space.sequential()):
        history.add(
            MeasurementCompleted.caused_by(
                operation.started,
                history.now + timedelta(milliseconds=index),
                index=index,
                operation_id="op-big",
                request_id=measurement_request_id("op-big", entity.id, "finetune"),
                space_id=space.space_id,
                sample_store=spec.sample_store,
                entity_id=entity.id,
                entity_values=entity.as_dict(),
                experiment_id="finetune",
                worker_id="w0",
                values={"train_tokens_per_second": float(index)},
                is_valid=True,
                uncertainty={},
                duration_seconds=1.0,
            )
        )
    return space.space_id, history.events


def _start(bootstrap: str, topics: TopicNames, data_dir: Path, port: int) -> subprocess.Popen:
    environment = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "DISCOSPACE_TOPIC_PREFIX": topics.prefix,
        "DISCOSPACE_STORE_DATA_DIR": str(data_dir),
        "DISCOSPACE_PROJECTOR_HTTP_PORT": str(port),
        # small batches, so that a kill lands between writes
        "DISCOSPACE_PROJECTOR_BATCH_MAX_EVENTS": "50",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "discospace.projector"],
        env=environment,
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _progress(port: int) -> dict[str, Any] | None:
    url = f"http://127.0.0.1:{port}/operation?id=op-big"
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return json.loads(answer.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _wait_for(port: int, enough: Any, timeout_s: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        progress = _progress(port)
        if progress is not None and enough(progress):
            return progress
        time.sleep(0.05)
    raise AssertionError(f"the projector did not get there in {timeout_s}s: {_progress(port)}")


def _stored(data_dir: Path) -> dict[str, int]:
    """Counts read by another process once the projector has let the data dir go."""
    script = (
        "import json; from discospace.store.client import StoreSettings, connect\n"
        f"c = connect(StoreSettings(url=None, data_dir={str(data_dir)!r}))\n"
        "q = lambda sql: int(c.command(sql))\n"
        "print(json.dumps({'events': q('SELECT count() FROM events FINAL'),"
        " 'entities': q('SELECT uniqExact(entity_id) FROM results WHERE is_valid'),"
        " 'results': q('SELECT count() FROM results FINAL')}))"
    )
    output = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    return json.loads(output.stdout)


async def test_a_projector_killed_mid_run_loses_nothing_and_duplicates_nothing(
    kafka_bootstrap, tmp_path, history, make_spec
) -> None:
    topics = TopicNames.unique("projector-kill")
    space_id, events = _history(history, make_spec)
    await EventClient(kafka_bootstrap).publish_batched(*events, topics=topics)
    port, data_dir = free_port(), tmp_path / "store"
    first = _start(kafka_bootstrap, topics, data_dir, port)
    try:
        partly = _wait_for(port, lambda p: 0 < p["counts"]["measured"] < ENTITIES)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    second = _start(kafka_bootstrap, topics, data_dir, port)
    try:
        done = _wait_for(port, lambda p: p["counts"]["measured"] >= ENTITIES)
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/space/entities?id={space_id}&include=measured", timeout=30
        ) as answer:
            measured = json.loads(answer.read())
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=60) == 0, second.stderr.read().decode() if second.stderr else ""
    assert partly["counts"]["measured"] < ENTITIES
    assert done["counts"] == {
        "requested": ENTITIES,
        "measured": ENTITIES,
        "reused": 0,
        "failed": 0,
        "invalid": 0,
        "in_flight": 0,
        "cancelled": 0,
    }
    assert len({row["entity_id"] for row in measured}) == len(measured) == ENTITIES
    assert _stored(data_dir) == {"events": len(events), "entities": ENTITIES, "results": ENTITIES}
