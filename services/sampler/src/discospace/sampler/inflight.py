"""Measurements in flight: one per (sample store, entity, parameterized experiment), others wait.

The memo knows only finished measurements. Two operations drawing the same entity of a shared
store moments apart would both send it to a pool. So the sampler also keeps, per memo key, the
request id of the measurement in flight (the holder) and the pairs of other requests that wait
for it (the waiters):

- a pair it sends to a pool (`MeasurementRequested`) holds its key until a completion of the
  key lands or the holder fails; a `MeasurementStarted` read from the log holds its key too
  (a measurement a worker took before this sampler started);
- the holder is an attempt of a request (`Holder`): a retry keeps the request id of the pair
  and counts up the attempt, so a later attempt of the holder's own request takes its place,
  and a failure frees the key only when it is of the attempt in flight or a later one (the
  failure of attempt 1, read after attempt 2 was sent, does not free what attempt 2 holds);
- a pair of another request whose key is held waits (`Waiting`): it gets no answer yet;
- a `MeasurementCompleted` of the key releases the holder and every waiter: each is answered
  with `MeasurementReused` of the memo's measurement (`land`);
- a `MeasurementFailed` of the holder releases the key and hands back the first waiter, which
  is then answered as if asked anew: sent to the pool as its own `MeasurementRequested` (it
  holds the key from then on), the others wait on for it (`fail`);
- a waiter whose operation ended is dropped (`end`); a holder stays: what is in flight lands;
- a pair of another request sent to a pool while the key is held (it waited longer than the
  sampler waits, `stop_waiting`, or both were read back at start) is a send of its own
  (`sent`): that request, read again, repeats its send to the same pool and does not wait; when
  the holder fails, such a send holds the key in its place and the waiters wait on for it (a
  waiter sent to a pool then would measure the key a third time while it is in flight).

Each waiting pair is answered exactly once: `land`, `fail` and `end` remove the waiters they
hand back. The deferred answer's id derives, like an immediate one, from the waiting request
and its pair number, so answering it again after a redelivery repeats the same event.
This module is pure: the handlers (`handlers.py`) publish what it hands back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from discospace.sampler.memo import MemoKey


@dataclass(frozen=True)
class Holder:
    """The measurement in flight for a key: its request id and attempt, and the pool it was
    sent to (None when only a worker's start of it was read)."""

    request_id: str
    attempt: int = 1
    pool: str | None = None

    def replaced_by(self, other: Holder) -> bool:
        """Whether `other` stands for the key in this one's place: a later attempt of the same
        request, or the same attempt with the pool it was sent to where this one has none."""
        if other.request_id != self.request_id:
            return False
        if other.attempt != self.attempt:
            return other.attempt > self.attempt
        return self.pool is None and other.pool is not None


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
        self._holders: dict[MemoKey, Holder] = {}
        self._others: dict[MemoKey, dict[str, Holder]] = {}
        """Sends of a held key for other requests than its holder's, by request id."""
        self._waiters: dict[MemoKey, list[Waiter]] = {}
        self._by_request: dict[str, int] = {}
        """How many pairs wait, per request event id (`waiting_for`, asked often)."""

    def holder(self, key: MemoKey) -> Holder | None:
        """The measurement in flight for `key`, if any."""
        return self._holders.get(key)

    def hold(
        self, key: MemoKey, request_id: str, attempt: int = 1, pool: str | None = None
    ) -> None:
        """A measurement of `key` was sent to `pool` (or started) for attempt `attempt` of
        `request_id`. The key keeps its holder, unless this is that holder's request again at
        a later attempt (or with the pool it was sent to): see `Holder.replaced_by`."""
        held = Holder(request_id, attempt, pool)
        current = self._holders.get(key)
        if current is None or current.replaced_by(held):
            self._holders[key] = held
        elif current.request_id != request_id:
            others = self._others.setdefault(key, {})
            known = others.get(request_id)
            if known is None or known.replaced_by(held):
                others[request_id] = held

    def sent(self, key: MemoKey, request_id: str) -> Holder | None:
        """The send of `key` for `request_id` in flight, if any: as its holder, or beside it."""
        current = self._holders.get(key)
        if current is not None and current.request_id == request_id:
            return current
        return self._others.get(key, {}).get(request_id)

    def wait(self, waiter: Waiter) -> None:
        """The waiter waits for the holder of its key (once, however often it is added)."""
        waiters = self._waiters.setdefault(waiter.key, [])
        if all(w.request_id != waiter.request_id for w in waiters):
            waiters.append(waiter)
            self._count(waiter, 1)

    def land(self, key: MemoKey) -> list[Waiter]:
        """A completion of `key` landed: nothing is in flight for it; the waiters to answer."""
        self._holders.pop(key, None)
        self._others.pop(key, None)
        return self._counted_out(self._waiters.pop(key, []))

    def fail(self, key: MemoKey, request_id: str, attempt: int = 1) -> Waiter | None:
        """Attempt `attempt` of `request_id` failed: if it held `key` (that attempt or an
        earlier one of the request: a retry is sent only after a failure), the key is free and
        the first waiter (removed) is to be sent to a pool in its place."""
        others = self._others.get(key, {})
        beside = others.get(request_id)
        if beside is not None and attempt >= beside.attempt:
            del others[request_id]  # a send beside the holder failed: the holder stays
            if not others:
                del self._others[key]
            return None
        current = self._holders.get(key)
        if current is None or current.request_id != request_id or attempt < current.attempt:
            return None
        del self._holders[key]
        if others:  # another request's send is in flight: it holds the key now
            request, send = next(iter(others.items()))
            del others[request]
            if not others:
                del self._others[key]
            self._holders[key] = send
            return None
        return self.next_waiter(key)

    def next_waiter(self, key: MemoKey) -> Waiter | None:
        """The first waiter of `key` (removed) when nothing holds the key: the waiter handed
        back by `fail` took no hold (no pool could take its pair, or the memo answered it), so
        the next one is answered in its turn rather than wait for a holder that never comes."""
        if key in self._holders:
            return None
        waiters = self._waiters.get(key)
        if not waiters:
            return None
        first = waiters.pop(0)
        if not waiters:
            del self._waiters[key]
        self._count(first, -1)
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
        return self._counted_out(dropped)

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
        return self._counted_out(released)

    def waiting_for(self, request_event_id: str) -> int:
        """How many pairs of the request (by its event id) still wait."""
        return self._by_request.get(request_event_id, 0)

    def _count(self, waiter: Waiter, change: int) -> None:
        count = self._by_request.get(waiter.request_event_id, 0) + change
        if count > 0:
            self._by_request[waiter.request_event_id] = count
        else:
            self._by_request.pop(waiter.request_event_id, None)

    def _counted_out(self, waiters: list[Waiter]) -> list[Waiter]:
        for waiter in waiters:
            self._count(waiter, -1)
        return waiters

    def __len__(self) -> int:
        """Keys in flight."""
        return len(self._holders)
