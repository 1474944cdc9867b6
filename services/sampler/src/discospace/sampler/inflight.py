"""Measurements in flight: one per (sample store, entity, parameterized experiment), others wait.

The memo knows only finished measurements. Two operations drawing the same entity of a shared
store moments apart would both send it to a pool. So the sampler also keeps, per memo key, the
request id of the measurement in flight (the holder) and the pairs of other requests that wait
for it (the waiters):

- a pair it sends to a pool (`MeasurementRequested`) holds its key until a completion of the
  key lands or the holder fails; a `MeasurementStarted` read from the log holds its key too
  (a measurement a worker took before this sampler started);
- a pair of another request whose key is held waits (`Waiting`): it gets no answer yet;
- a `MeasurementCompleted` of the key releases the holder and every waiter: each is answered
  with `MeasurementReused` of the memo's measurement (`land`);
- a `MeasurementFailed` of the holder releases the key and hands back the first waiter, which
  is then answered as if asked anew: sent to the pool as its own `MeasurementRequested` (it
  holds the key from then on), the others wait on for it (`fail`);
- a waiter whose operation ended is dropped (`end`); a holder stays: what is in flight lands.

Each waiting pair is answered exactly once: `land`, `fail` and `end` remove the waiters they
hand back. The deferred answer's id derives, like an immediate one, from the waiting request
and its pair number, so answering it again after a redelivery repeats the same event.
This module is pure: the handlers (`handlers.py`) publish what it hands back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from discospace.sampler.memo import MemoKey


@dataclass(frozen=True)
class Waiter:
    """A pair of a request that waits for the measurement in flight of its key."""

    key: MemoKey
    request_id: str
    """The waiting pair's own measurement request id."""
    operation_id: str
    request_event_id: str
    """event_id of the `SamplesRequested` the pair belongs to."""
    payload: object = field(compare=False)
    """What answering it later needs (the handlers' business)."""


class InFlight:
    """The holder of every key in flight and the waiters of each, in the order they came."""

    def __init__(self) -> None:
        self._holders: dict[MemoKey, str] = {}
        self._waiters: dict[MemoKey, list[Waiter]] = {}

    def holder(self, key: MemoKey) -> str | None:
        """The request id of the measurement in flight for `key`, if any."""
        return self._holders.get(key)

    def hold(self, key: MemoKey, request_id: str) -> None:
        """A measurement of `key` was sent to a pool (or started) for `request_id`."""
        self._holders.setdefault(key, request_id)

    def wait(self, waiter: Waiter) -> None:
        """The waiter waits for the holder of its key (once, however often it is added)."""
        waiters = self._waiters.setdefault(waiter.key, [])
        if all(w.request_id != waiter.request_id for w in waiters):
            waiters.append(waiter)

    def land(self, key: MemoKey) -> list[Waiter]:
        """A completion of `key` landed: nothing is in flight for it; the waiters to answer."""
        self._holders.pop(key, None)
        return self._waiters.pop(key, [])

    def fail(self, key: MemoKey, request_id: str) -> Waiter | None:
        """The measurement of `request_id` failed: if it held `key`, the key is free and the
        first waiter (removed) is to be sent to a pool in its place."""
        if self._holders.get(key) != request_id:
            return None
        del self._holders[key]
        waiters = self._waiters.get(key, [])
        if not waiters:
            self._waiters.pop(key, None)
            return None
        first = waiters.pop(0)
        if not waiters:
            del self._waiters[key]
        return first

    def end(self, operation_id: str) -> list[Waiter]:
        """The operation ended: its waiters are dropped (and handed back)."""
        dropped: list[Waiter] = []
        for key in list(self._waiters):
            kept = [w for w in self._waiters[key] if w.operation_id != operation_id]
            dropped += [w for w in self._waiters[key] if w.operation_id == operation_id]
            if kept:
                self._waiters[key] = kept
            else:
                del self._waiters[key]
        return dropped

    def release(self, request_event_id: str) -> list[Waiter]:
        """The pairs of the request (by its event id) stop waiting: removed and handed back."""
        released: list[Waiter] = []
        for key in list(self._waiters):
            kept = [w for w in self._waiters[key] if w.request_event_id != request_event_id]
            released += [w for w in self._waiters[key] if w.request_event_id == request_event_id]
            if kept:
                self._waiters[key] = kept
            else:
                del self._waiters[key]
        return released

    def waiting_for(self, request_event_id: str) -> int:
        """How many pairs of the request (by its event id) still wait."""
        return sum(1 for w in self._all() if w.request_event_id == request_event_id)

    def _all(self) -> Iterator[Waiter]:
        for waiters in self._waiters.values():
            yield from waiters

    def __len__(self) -> int:
        """Keys in flight."""
        return len(self._holders)
