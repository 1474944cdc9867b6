"""The sampler's state and its one decision, pure (no Kafka, clock or randomness).

State is five folds: registered spaces (to draw from), pools (to route to), the memo of every
sample store (to reuse from), the measurements in flight and the pairs waiting for them
(`inflight.py`), and the first request of each operation and request index (the only one
answered, `first.py`). `decide` answers one `SamplesRequested` with the events of
`discospace.sampler.answers` (and the pairs that wait); `take` folds that answer into the
in-flight set; `land`, `fail` and `end` answer (or drop) the waiters when a measurement lands,
fails, or an operation ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    SamplesRequested,
    SpaceRegistered,
)
from discospace.sampler.answers import (
    Answer,
    Context,
    PairAnswer,
    Waiting,
    answer,
    answer_pair,
    reused_later,
)
from discospace.sampler.drawing import SpaceBook, draw_entities
from discospace.sampler.first import FirstRequests
from discospace.sampler.inflight import InFlight, Waiter
from discospace.sampler.memo import MemoIndex, MemoKey
from discospace.sampler.routing import PoolDirectory


class UnknownSpaceError(LookupError):
    """A request names a space the sampler has not seen registered (yet)."""

    def __init__(self, space_id: str) -> None:
        super().__init__(f"space '{space_id}' is not registered (or not read yet)")
        self.space_id = space_id


@dataclass
class SamplerState:
    """What the sampler folded: spaces, pools, the memo of the sample stores, first requests."""

    spaces: SpaceBook = field(default_factory=SpaceBook)
    pools: PoolDirectory = field(default_factory=PoolDirectory)
    memo: MemoIndex = field(default_factory=MemoIndex)
    in_flight: InFlight = field(default_factory=InFlight)
    requests: FirstRequests = field(default_factory=FirstRequests)
    failed_requests: dict[str, int] = field(default_factory=dict)
    """The highest attempt that failed, per request id of a measurement: a request read back at
    start is not in flight when that attempt of it, or a later one, failed. Forgotten once the
    request completes (the memo holds its key then)."""
    owed: dict[str, list[Answer]] = field(default_factory=dict)
    """Answers of waiting pairs, per `SamplesRequested` event id, that the measurement they
    waited for brought (a reuse, or a request sent in a failed holder's place): published by
    that request's own waiting task (`handlers.py`), whose commit they are part of."""


def evolve_space(state: SamplerState, event: SpaceRegistered) -> None:
    state.spaces.record(event)


def evolve_pools(state: SamplerState, event: ActuatorRegistered) -> None:
    state.pools.record(event)


def evolve_memo(state: SamplerState, event: MeasurementCompleted) -> bool:
    """Fold one completion into the memo; True when it became the memo of its pair."""
    return state.memo.record(event)


def decide(state: SamplerState, request: SamplesRequested, now: datetime) -> list[Answer | Waiting]:
    """The answer to one request for samples; raises `UnknownSpaceError` for an unseen space."""
    space = state.spaces.get(request.space_id)
    if space is None:
        raise UnknownSpaceError(request.space_id)
    drawn = draw_entities(request, space)
    context = Context(request, space.sample_store, now, space.definitions, space.entity_space.names)
    return answer(context, drawn, state.memo, state.pools, state.in_flight, state.failed_requests)


def _key(event: MeasurementRequested | MeasurementStarted | MeasurementCompleted) -> MemoKey:
    return (event.sample_store, event.entity_id, event.experiment_id)


def take(state: SamplerState, answers: list[Answer | Waiting]) -> list[Answer]:
    """Fold a decision into the in-flight set (what it sends to pools holds its key, what
    waits waits); the events to publish now."""
    events: list[Answer] = []
    for item in answers:
        if isinstance(item, Waiting):
            state.in_flight.wait(_waiter(item))
            continue
        if isinstance(item, MeasurementRequested):
            state.in_flight.hold(_key(item), item.request_id, item.attempt, item.pool)
        events.append(item)
    return events


def _waiter(waiting: Waiting) -> Waiter:
    request = waiting.context.request
    return Waiter(waiting.key, waiting.request_id, request.operation_id, request.event_id, waiting)


def evolve_started(state: SamplerState, event: MeasurementStarted) -> None:
    """A worker took a measurement: its key is in flight (unless the memo already holds it)."""
    if state.memo.lookup(*_key(event)) is None:
        state.in_flight.hold(_key(event), event.request_id, event.attempt)


def land(
    state: SamplerState, event: MeasurementCompleted, now: datetime
) -> list[MeasurementReused]:
    """Fold a completion into the memo; the deferred reuses of the pairs that waited for it."""
    state.memo.record(event)
    state.failed_requests.pop(event.request_id, None)  # the memo holds its key from now on
    found = state.memo.lookup(*_key(event))
    assert found is not None
    waiters = state.in_flight.land(_key(event))
    return [reused_later(_waiting(w), found, now) for w in waiters]


def hold_sent(state: SamplerState, event: MeasurementRequested) -> None:
    """A measurement request read back from a pool's topic at start (sent before this sampler
    started, perhaps not taken by a worker yet): its key is in flight unless the memo holds it
    or that attempt of the request failed (a retry read back after its request's first failure
    is in flight)."""
    failed = state.failed_requests.get(event.request_id, 0)
    if state.memo.lookup(*_key(event)) is None and event.attempt > failed:
        state.in_flight.hold(_key(event), event.request_id, event.attempt, event.pool)


def fail(state: SamplerState, event: MeasurementFailed, now: datetime) -> list[Answer]:
    """The holder of a key failed: the first waiter is answered anew (sent to a pool); while
    an answer takes no hold of the key (no pool can take the pair any more), the next waiter
    is answered too (left waiting, it waited for a holder that never came, until its wait ran
    out, its request's offset held all that time)."""
    failed = state.failed_requests
    failed[event.request_id] = max(failed.get(event.request_id, 0), event.attempt)
    key = (event.sample_store, event.entity_id, event.experiment_id)
    waiter = state.in_flight.fail(key, event.request_id, event.attempt)
    events: list[Answer] = []
    while waiter is not None:
        waiting = _waiting(waiter)
        context = replace(waiting.context, now=now)
        answered: PairAnswer | Waiting | None = answer_pair(
            context, waiting.pair, state.memo, state.pools, state.in_flight
        )
        events += take(state, [answered] if answered is not None else [])
        waiter = state.in_flight.next_waiter(key)
    return events


def stop_waiting(state: SamplerState, request_event_id: str, now: datetime) -> list[Answer]:
    """The request waited long enough: each of its pairs still waiting is sent to a pool on
    its own (measured a second time rather than block the request's partition any longer);
    the key's holder stays as it was."""
    answers: list[Answer | Waiting] = []
    for waiter in state.in_flight.release(request_event_id):
        waiting = _waiting(waiter)
        context = replace(waiting.context, now=now)
        answered = answer_pair(
            context, waiting.pair, state.memo, state.pools, state.in_flight, wait=False
        )
        if answered is not None:
            answers.append(answered)
    return take(state, answers)


def end(state: SamplerState, operation_id: str) -> int:
    """The operation ended: its waiting pairs are dropped; how many."""
    return len(state.in_flight.end(operation_id))


def _waiting(waiter: Waiter) -> Waiting:
    assert isinstance(waiter.payload, Waiting)
    return waiter.payload
