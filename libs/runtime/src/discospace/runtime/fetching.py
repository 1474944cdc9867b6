"""A consumer's fetch wait at the broker: short while records flow, long once it is idle.

aiokafka keeps one fetch in flight per broker, and leaves out of it the partitions whose
records the consumer still holds: a partition handled meanwhile waits for that fetch to come
back before it is fetched again. Hence the short `fetch_max_wait_ms` of every service (5 ms;
20 ms when the figures below were taken), which bounds that wait; its price is many fetches a
second per consumer while nothing happens (at 20 ms, an idle loop of five services and its
broker used 41-45% of one core).

An idle consumer holds no records, so its fetch covers every partition it reads, and the broker
answers it as soon as any record arrives: a long wait then delays nothing. `adapt_on_start`
makes a subscriber's consumer use `fetch_max_wait_ms` while it has had records within the last
`IDLE_AFTER_S`, and the long wait (`fetch_idle_wait_ms`) after that, until records come again.

While records flow, a consumer also asks for `fetch_min_bytes` (4096 for the services, 16 KiB
for the projector, whose writes linger anyway): the broker answers a fetch once that much has
gathered, or after `fetch_max_wait_ms`, and the consumer fetches (and parses the answer for
every partition it reads) once per few records rather than once per record or two. An idle
fetch asks for one byte whatever that setting says: the first record after a quiet spell is
answered at once, never held for the idle wait.

Measured on this 2-core machine (`benchmarks/bench_loop.py`'s services and 800-entity walk,
`fetch_idle_wait_ms` 500 against unset, three interleaved pairs, each on a broker warmed by two
walks first):
- an idle loop (five services and the broker, 10 s from /proc): 15.0 / 16.0 / 18.2% of one
  core against 41.2 / 41.7 / 44.8% (the broker 6.2-7.8% against 15.7-16.8%);
- the walk: 77.4 / 80.1 / 81.9 measurements per second against 68.1 / 75.4 / 75.5, and
  22.0-23.7 ms of CPU per measurement against 24.3-27.0.
On a broker just started, the same pairs went the other way (about 10% slower, 2.3 ms more
broker CPU per measurement): its JIT compiler was still at work, a third of its CPU in the first
walk, and compiled the paths of the two settings differently. A deployment's broker runs warm.

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
    for `idle_after_s`, and with its own `fetch_max_wait_ms` otherwise. False when
    `idle_wait_ms` is no longer than that, and (with a warning) when its fetcher is not one this
    module knows."""
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
    if idle_wait_ms <= busy_ms:  # no longer than the wait it has: nothing to adapt
        return False
    busy_min_bytes = getattr(fetcher, "_fetch_min_bytes", None)
    busy_at = time.monotonic()

    def actions_per_node(assignment: Any) -> Any:
        nonlocal busy_at
        now = time.monotonic()
        if fetcher._records:  # type: ignore[union-attr]  # records held: not idle
            busy_at = now
        idle = now - busy_at >= idle_after_s
        fetcher._fetch_max_wait_ms = idle_wait_ms if idle else busy_ms  # type: ignore[union-attr]
        if isinstance(busy_min_bytes, int):  # idle: the broker answers on any record
            fetcher._fetch_min_bytes = 1 if idle else busy_min_bytes  # type: ignore[union-attr]
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
