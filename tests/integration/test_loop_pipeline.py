"""The loop benchmark's baseline moves every message through all four hops, both ways.

`benchmarks/loop_pipeline.py` is the bare aiokafka pipeline `bench_loop.py` compares the loop
with; a baseline that skipped a hop would flatter the loop's ratio, so the records on each
hop's topic are counted on the real broker.
"""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

pytestmark = pytest.mark.integration

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _pipeline(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The module, importable by name here and in the relays (spawned with this sys.path)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("loop_pipeline")


async def _records_on(bootstrap: str, topic: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    try:
        await consumer.start()
        partition = TopicPartition(topic, 0)
        return (await consumer.end_offsets([partition]))[partition]
    finally:
        await consumer.stop()


@pytest.mark.parametrize("mode", ["batched", "single"])
def test_every_message_crosses_every_hop(
    kafka_bootstrap: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = _pipeline(monkeypatch)

    run = pipeline.run(kafka_bootstrap, mode, messages=40, window=8)

    assert run.messages == 40
    assert run.seconds > 0
    assert run.cpu_seconds >= 0, "the kernel counts CPU in clock ticks: a 40-message run may read 0"
    counts = {
        hop: asyncio.run(_records_on(kafka_bootstrap, f"{run.prefix}.{hop}"))
        for hop in pipeline.HOPS
    }
    assert counts == dict.fromkeys(pipeline.HOPS, 41), "40 messages and the warm-up each"


def test_cpu_seconds_counts_a_busy_process_and_skips_a_gone_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = _pipeline(monkeypatch)
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.process_time() + 0.3\n"
            "while time.process_time() < end: pass\ninput()",
        ],
        stdin=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while pipeline.cpu_seconds([busy.pid]) < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)
        used = pipeline.cpu_seconds([busy.pid])
    finally:
        busy.communicate(b"\n", timeout=30)

    assert 0.25 <= used < 5
    assert pipeline.cpu_seconds([busy.pid]) == 0, "a process that is gone counts 0"
