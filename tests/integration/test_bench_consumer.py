"""The consumer benchmark's subjects read what they claim to, on the real broker.

`benchmarks/bench_consumer.py` divides CPU by the events between two marks; its `ignored`
subject is only a measure of ignored events if none of them reaches the handler and each
decodes (so none is dead-lettered instead), and its `handled` one only if no event is dropped
as a duplicate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType

import pytest

from discospace.events import ActuatorRegistered, decode

pytestmark = pytest.mark.integration


def test_the_backlogs_are_distinct_events_taken_or_not_taken_by_the_handler(
    benchmark: Callable[[str], ModuleType],
) -> None:
    bench = benchmark("bench_consumer")

    taken = [decode(bench.taken(i)) for i in range(50)]
    others = [decode(bench.not_taken(i)) for i in range(50)]

    assert all(isinstance(event, ActuatorRegistered) for event in taken)
    assert not any(isinstance(event, ActuatorRegistered) for event in others)
    assert len({event.event_id for event in taken + others}) == 100


def test_every_subject_reads_its_whole_backlog(
    kafka_bootstrap: str, benchmark: Callable[[str], ModuleType]
) -> None:
    bench = benchmark("bench_consumer")

    figures = asyncio.run(bench.run(kafka_bootstrap, 300, 1, lambda line: None))

    assert set(figures) == {"baseline", "handled", "ignored"}
    assert all(len(values) == 1 and values[0] > 0 for values in figures.values())
