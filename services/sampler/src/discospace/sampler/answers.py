"""The sampler's answer to one `SamplesRequested`, as events with ids derived from it.

`SamplesDrawn` comes first; then, for each drawn entity and each experiment (pair number k),
one of:

- nothing, when the memo already holds this operation's own result for the pair (the request
  is being handled again after a crash, and the explorer has that result);
- `MeasurementReused` (index k), when the sample store holds a result and the operation
  measures each pair once (`single_measurement`);
- `Waiting` (no event yet), when such an operation's pair is in flight for another request
  (`inflight.py`): it is answered when that measurement lands (`MeasurementReused`, index k),
  or sent to the pool (`MeasurementRequested`, index k) if it fails;
- `MeasurementRequested` (index k) to the pool that runs the experiment;
- `MeasurementFailed` (index k, retryable), when no pool can run it: a pool may announce itself
  later, and the explorer retries within its `max_retries`.

Every id derives from the request's id and k, so handling the request twice yields the same
events, which every consumer drops as duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, TypeAlias

from discospace.core import Entity, parameterized_experiment_id
from discospace.core.spec import ExperimentRef
from discospace.events import (
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    SamplesDrawn,
    SamplesRequested,
    measurement_request_id,
)
from discospace.events.common import PropertyValues
from discospace.sampler.drawing import Drawn
from discospace.sampler.inflight import Holder, InFlight
from discospace.sampler.memo import Memo, MemoIndex, MemoKey
from discospace.sampler.routing import PoolDirectory, Unroutable

SAMPLER_WORKER_ID = "sampler"
"""`worker_id` of the failures the sampler itself reports (no pool could take the pair)."""

PairAnswer: TypeAlias = MeasurementRequested | MeasurementReused | MeasurementFailed
Answer: TypeAlias = SamplesDrawn | PairAnswer


@dataclass(frozen=True)
class Pair:
    """One entity and one experiment of a request: pair number `index` of the request."""

    index: int
    entity: Entity
    ref: ExperimentRef
    inputs: PropertyValues

    @property
    def experiment_id(self) -> str:
        return parameterized_experiment_id(self.ref.experiment, self.ref.parameterization)


@dataclass(frozen=True)
class Waiting:
    """A pair in flight for another request: answered when that measurement ends."""

    context: Context
    pair: Pair
    request_id: str

    @property
    def key(self) -> MemoKey:
        return (self.context.sample_store, self.pair.entity.id, self.pair.experiment_id)


@dataclass(frozen=True)
class Context:
    """What answering a request needs besides the request."""

    request: SamplesRequested
    sample_store: str
    now: datetime
    definitions: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """What the space's experiments measure as they were registered (`measured_as`, for the
    entities of the space), by (actuator, parameterized experiment id): a pool is sent a pair
    only where it announced the same."""
    given: tuple[str, ...] = ()
    """The space's property names: an option an entity gives is measured with its value."""


def samples_drawn(context: Context, drawn: Drawn) -> SamplesDrawn:
    request = context.request
    return SamplesDrawn.caused_by(
        request,
        context.now,
        operation_id=request.operation_id,
        request_index=request.request_index,
        entity_ids=tuple(entity.id for entity in drawn.entities),
        next_position=drawn.next_position,
        exhausted=drawn.exhausted,
        rejected_points=drawn.rejected,
    )


def pairs_of(request: SamplesRequested, drawn: Drawn) -> list[Pair]:
    """Every (entity, experiment) pair of the drawn entities, numbered in drawing order."""
    combos = [
        (entity, inputs, ref)
        for entity, inputs in zip(drawn.entities, drawn.inputs, strict=True)
        for ref in request.experiments
    ]
    return [Pair(k, entity, ref, inputs) for k, (entity, inputs, ref) in enumerate(combos)]


_NONE_FAILED: Mapping[str, int] = MappingProxyType({})


def answer_pair(
    context: Context,
    pair: Pair,
    memo: MemoIndex,
    pools: PoolDirectory,
    in_flight: InFlight,
    wait: bool = True,
    failed: Mapping[str, int] = _NONE_FAILED,
) -> PairAnswer | Waiting | None:
    """The event that answers one pair (see the module docstring), `Waiting`, or None.
    `wait=False`: a pair that has waited long enough is sent to a pool even though its key is
    in flight for another request. `failed`: the highest attempt that failed, per request id
    (`SamplerState.failed_requests`)."""
    request = context.request
    request_id = measurement_request_id(request.operation_id, pair.entity.id, pair.experiment_id)
    if failed.get(request_id, 0) >= request.attempt:
        # a request read again after its attempt failed: that failure is its answer (the
        # explorer retries with the next attempt); sent again, it was measured beside the
        # retry, or held the key for good when its answer was a repeat dropped as a duplicate
        return None
    key = (context.sample_store, pair.entity.id, pair.experiment_id)
    found = memo.lookup(*key)
    if found is not None and memo.completed(key, request_id):
        return None  # the operation has its own result: a request read again asks nothing
    subject = _subject(context, pair, request_id)
    if found is not None and request.single_measurement:
        return _reused(context, pair, found, subject)
    holder = in_flight.holder(key)
    own = in_flight.sent(key, request_id)  # this request's send, already in flight
    waits = wait and request.single_measurement and own is None
    if holder is not None and holder.request_id != request_id and waits:
        return Waiting(context, pair, request_id)
    registered = context.definitions.get((pair.ref.actuator, pair.experiment_id))
    pool = _sent_to(own, request_id, request.attempt) or pools.route(
        pair.ref, pair.entity, registered, context.given
    )
    if isinstance(pool, Unroutable):
        return MeasurementFailed.caused_by(
            request,
            context.now,
            pair.index,
            **subject,
            worker_id=SAMPLER_WORKER_ID,
            attempt=request.attempt,
            reason=pool.reason,
            retryable=True,
        )
    return MeasurementRequested.caused_by(
        request,
        context.now,
        pair.index,
        **subject,
        experiment=pair.ref,
        pool=pool,
        attempt=request.attempt,
        inputs=pair.inputs,
    )


def _sent_to(holder: Holder | None, request_id: str, attempt: int) -> str | None:
    """The pool this very attempt of the pair was sent to already, if it holds its key: a
    request answered again (read again before its offset was committed) sends the same event to
    the same pool's topic, a copy that pool's consumers take as a redelivery, whatever pools
    have come since (routing anew could pick another pool of the GPU model, whose workers would
    measure the pair a second time)."""
    if holder is not None and holder.request_id == request_id and holder.attempt == attempt:
        return holder.pool
    return None


def _subject(context: Context, pair: Pair, request_id: str) -> dict[str, Any]:
    """The fields every measurement event of the pair carries."""
    return {
        "operation_id": context.request.operation_id,
        "request_id": request_id,
        "space_id": context.request.space_id,
        "sample_store": context.sample_store,
        "entity_id": pair.entity.id,
        "entity_values": pair.entity.as_dict(),
        "experiment_id": pair.experiment_id,
    }


def reused_later(waiting: Waiting, found: Memo, now: datetime) -> MeasurementReused:
    """The deferred answer of a waiting pair once its key's measurement landed: the same id
    as an immediate reuse (the waiting request and its pair number)."""
    context = replace(waiting.context, now=now)
    subject = _subject(context, waiting.pair, waiting.request_id)
    return _reused(context, waiting.pair, found, subject)


def _reused(
    context: Context, pair: Pair, found: Memo, subject: dict[str, Any]
) -> MeasurementReused:
    return MeasurementReused.caused_by(
        context.request,
        context.now,
        pair.index,
        **subject,
        reused_event_id=found.event_id,
        values=found.values,
        is_valid=found.is_valid,
        invalid_reason=found.invalid_reason,
    )


def answer(
    context: Context,
    drawn: Drawn,
    memo: MemoIndex,
    pools: PoolDirectory,
    in_flight: InFlight,
    failed: Mapping[str, int] = _NONE_FAILED,
) -> list[Answer | Waiting]:
    """`SamplesDrawn`, then the answer of every pair that needs one (or its `Waiting`)."""
    answers: list[Answer | Waiting] = [samples_drawn(context, drawn)]
    for pair in pairs_of(context.request, drawn):
        event = answer_pair(context, pair, memo, pools, in_flight, failed=failed)
        if event is not None:
            answers.append(event)
    return answers
