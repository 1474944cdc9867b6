"""A consumer's fetch wait at the broker: short while records flow, long once it is idle.

aiokafka keeps one fetch in flight per broker, and leaves out of it the partitions whose
records the consumer still holds: a partition handled meanwhile waits for that fetch to come
back before it is fetched again. Hence the short `fetch_max_wait_ms` of every service (20 ms),
which bounds that wait; its price is about fifty fetches a second per consumer while nothing
happens (an idle loop of five services kept its broker at 45% of one core).

An idle consumer holds no records, so its fetch covers every partition it reads, and the broker
answers it as soon as any record arrives: a long wait then delays nothing. `adapt_on_start`
makes a subscriber's consumer use `fetch_max_wait_ms` while it has had records within the last
`IDLE_AFTER_S`, and the long wait (`fetch_idle_wait_ms`) after that, until records come again.

Measured on this 2-core machine (`benchmarks/bench_loop.py`'s services and walk, 20 ms against
20 ms with 500 ms once idle, three interleaved pairs): an idle loop used 16-19% of one core
against 68% (its broker 11-14% against 47-48%). Under the loop's full load it ran about 10%
slower, 58.7 / 61.3 / 62.3 against 66.0 / 67.0 / 69.5 measurements per second, and its broker
spent 2.3 ms more CPU per measurement although it was sent fewer fetches (the registry's 2.0 ->
0.1 per measurement): the broker pays more for fetches parked at it than for fetches answered
empty at once. So it is off unless `fetch_idle_wait_ms` is set: set it where a deployment
idles more than it works.

This reaches into aiokafka's fetcher (`_get_actions_per_node`, which builds each fetch request
from `_fetch_max_wait_ms`); a version of aiokafka without them gets the fixed wait and a warning.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("discospace.runtime.fetching")

IDLE_AFTER_S = 1.0
"""How long a consumer must have had no records before its fetches wait the idle wait."""


def adapt_fetch_wait(
    consumer: object, idle_wait_ms: int, idle_after_s: float = IDLE_AFTER_S
) -> bool:
    """Make a started aiokafka `consumer` fetch with `idle_wait_ms` once it has had no records
    for `idle_after_s`, and with its own `fetch_max_wait_ms` otherwise. False (and a warning)
    when its fetcher is not one this module knows."""
    fetcher = getattr(consumer, "_fetcher", None)
    build: Callable[[Any], Any] | None = getattr(fetcher, "_get_actions_per_node", None)
    busy_ms = getattr(fetcher, "_fetch_max_wait_ms", None)
    records = getattr(fetcher, "_records", None)
    if build is None or not isinstance(busy_ms, int) or records is None:
        logger.warning(
            "fetch_idle_wait_ms is not applied: this aiokafka's fetcher has no "
            "_get_actions_per_node, _fetch_max_wait_ms and _records (the fixed wait is used)"
        )
        return False
    busy_at = time.monotonic()

    def actions_per_node(assignment: Any) -> Any:
        nonlocal busy_at
        now = time.monotonic()
        if fetcher._records:  # type: ignore[union-attr]  # records held: not idle
            busy_at = now
        idle = now - busy_at >= idle_after_s
        fetcher._fetch_max_wait_ms = idle_wait_ms if idle else busy_ms  # type: ignore[union-attr]
        return build(assignment)

    fetcher._get_actions_per_node = actions_per_node  # type: ignore[union-attr]
    return True


def adapt_on_start(subscriber: Any, idle_wait_ms: int | None) -> None:
    """Apply `adapt_fetch_wait` to the consumer a FastStream `subscriber` starts (each time it
    starts); nothing when `idle_wait_ms` is None."""
    if idle_wait_ms is None:
        return
    start = subscriber.start

    async def start_then_adapt(*args: Any, **kwargs: Any) -> None:
        await start(*args, **kwargs)
        if subscriber.consumer is not None:
            adapt_fetch_wait(subscriber.consumer, idle_wait_ms)

    subscriber.start = start_then_adapt
