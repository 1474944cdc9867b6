"""The rebuild benchmark's history is one the explorer's start-up fold takes in full.

`benchmarks/bench_rebuild.py` times the explorer's fold at start over a history it builds; a
history with events the fold skipped or failed (or operations it never saw end) would time less
than the real work, so a short one is produced on the real broker and folded by a real explorer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from discospace.events import (
    MeasurementCompleted,
    MeasurementStarted,
    OperationCompleted,
    SamplesRequested,
    TopicNames,
)

pytestmark = pytest.mark.integration


def test_the_history_holds_whole_walks_of_every_kind_of_event(
    benchmark: Callable[[str], ModuleType],
) -> None:
    bench = benchmark("bench_rebuild")

    walks = list(bench.history(400))

    events = [event for walk in walks for event in walk]
    assert 390 <= len(events) <= 400
    kinds = {type(event) for event in events}
    assert {SamplesRequested, MeasurementStarted, MeasurementCompleted} <= kinds
    assert all(isinstance(walk[-1], OperationCompleted) for walk in walks[1:])
    assert len({event.event_id for event in events}) == len(events)


def test_the_explorer_folds_every_event_of_the_history_at_start(
    kafka_bootstrap: str, benchmark: Callable[[str], ModuleType]
) -> None:
    bench = benchmark("bench_rebuild")
    topics = TopicNames.unique("bench-rebuild-test")

    async def run() -> tuple[Any, Any, float]:
        await bench.provision(kafka_bootstrap, topics)
        produced = await bench.produce(kafka_bootstrap, topics, bench.history(400))
        rebuilt = await bench.rebuild(kafka_bootstrap, topics)
        bare = await bench.bare_read(kafka_bootstrap, topics, lambda value: None)
        return produced, rebuilt, bare

    produced, rebuilt, bare = asyncio.run(run())

    assert produced.operations >= 2
    assert rebuilt.report.folded == produced.events
    assert (rebuilt.report.ignored, rebuilt.report.unreadable, rebuilt.report.failed) == (0, 0, 0)
    assert rebuilt.operations == rebuilt.finished == produced.operations
    assert 0 < rebuilt.folded_s <= rebuilt.live_s
    assert bare > 0
