"""Python's cyclic garbage collector, set for a long-running service process.

CPython collects its youngest generation every 700 allocations of tracked objects (its
`gc.get_threshold()[0]`), and promotes what survives. A service decodes events into pydantic
models and keeps many of them a while (the projector's buffer holds thousands until they are
written), so every young collection walks objects that are still alive, and the older
generations, collected a tenth and a hundredth as often, walk them again. Measured on the
projector's path (60,000 measurement events, decoded and kept until written): decoding took
15.6 µs an event with Python's thresholds and 8.3 µs with the youngest at 50,000; the projector
service end to end went from 16,200 to 21,800 events per second (`benchmarks/bench_projector.py`).

`tune_collector(young)` sets the youngest generation's threshold (the older two keep their ratios,
Python's 10 and 10, so a full collection still follows every 100 young ones) and freezes what
exists when the process has built its service (modules, classes, settings, the app): those live
as long as the process, and a frozen object is never walked again (`gc.freeze`). The price is
that cyclic garbage waits up to `young` allocations, a few megabytes at most, before it is
freed; objects freed by their reference count (nearly all) go at once as before.

`serve` calls it for every service process (`ServiceSettings.gc_young_threshold`);
`benchmarks/bench_projector.py`, which runs the projector in its own process, calls it likewise.
It changes the whole process, so tests that start services inside pytest do not call it.

`collector_paused()` turns the collector off for a block: a service's start-up fold
(`folding.py`), which keeps most of what it decodes, and the projector's space view
(`StoreViews.entities`), which keeps every row of the space until its table is built.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

logger = logging.getLogger("discospace.runtime.collector")


def tune_collector(young: int) -> None:
    """Collect the youngest generation every `young` allocations; freeze what exists now."""
    if young < 1:
        raise ValueError(f"the collector's young threshold must be at least 1, not {young}.")
    _, middle, old = gc.get_threshold()
    gc.collect()  # what start-up made and dropped is freed, not frozen
    gc.freeze()
    gc.set_threshold(young, middle, old)
    logger.debug(
        "garbage collector: young generation every %d allocations, %d objects frozen",
        young,
        gc.get_freeze_count(),
    )


@dataclass
class _Pauses:
    """The blocks of this process pausing the cyclic garbage collector now, and whether it ran
    before the first of them."""

    running: int = 0
    was_enabled: bool = False


_pauses = _Pauses()
_pauses_lock = threading.Lock()
"""Blocks may begin and end in several threads (the projector's views run on its store's)."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (reference counting still frees
    what is dropped); on again when the last of the blocks running at once ends, if it was on
    when the first began."""
    with _pauses_lock:
        if _pauses.running == 0:
            _pauses.was_enabled = gc.isenabled()
            gc.disable()
        _pauses.running += 1
    try:
        yield
    finally:
        with _pauses_lock:
            _pauses.running -= 1
            if _pauses.running == 0 and _pauses.was_enabled:
                gc.enable()
