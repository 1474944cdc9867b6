"""The sampler's handlers: module-level functions of the event and the sampler's parts.

Each takes the event and `SamplerDeps` (built by `bootstrap.py`); the app subscribes them bound
to the parts (`discospace.runtime.bind`), so a test runs one with hand-built parts, no app and
no broker.

- Folds, on the sampler's followers (at start every event up to where the topics ended, once,
  before any request is answered; then live): `on_space_event` (registered spaces),
  `on_actuator_registered` (pools), `on_measurement_event` (the memo and what is in flight;
  live, it also answers the pairs that waited for a measurement that landed or failed, see
  `inflight.py`), `on_request_read` (the first request of each operation and request index,
  and the operations that ended, whose waiting pairs are dropped; see `first.py`).
- `on_samples_requested`, in the sampler's group: answers a request when it is the first of its
  slot in the log and its operation has not ended there, once its space is known (waiting up
  to `space_wait_s` for one registered moments ago). A request with pairs waiting for a
  measurement in flight holds its offset (`runtime.hold_commit`) and returns, so the consumer
  answers the next requests meanwhile (waiting in the handler stopped every partition of the
  sampler's consumer, all operations, for up to `in_flight_wait_s`). Its waiting task
  publishes the answers the awaited measurement brings (`SamplerState.owed`: the memo's
  follower puts them there, so a failed publish is tried again by the task that holds the
  offset, not lost with the follower's message), sends what still waits after
  `in_flight_wait_s` to a pool, then releases the offset: a sampler that restarts meanwhile
  answers the request again, with the same ids.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    OperationCompleted,
    OperationFailed,
    SamplesRequested,
    SpaceRegistered,
    SpaceRejected,
)
from discospace.events.factory import Clock
from discospace.events.topics import TopicNames
from discospace.runtime import TransientError, hold_commit, is_transient
from discospace.runtime.replay import replay
from discospace.runtime.retrying import until_done
from discospace.sampler.answers import Answer
from discospace.sampler.domain import (
    SamplerState,
    decide,
    end,
    evolve_pools,
    evolve_space,
    evolve_started,
    fail,
    hold_sent,
    land,
    stop_waiting,
    take,
)
from discospace.sampler.first import Verdict
from discospace.sampler.metrics import SamplerMetrics

MeasurementEvent: TypeAlias = (
    MeasurementStarted | MeasurementCompleted | MeasurementFailed | MeasurementReused
)
SPACE_POLL_S = 0.05
WAITING_POLL_S = 0.05
PUBLISH_RETRY_S = 1.0
"""Pause before a waiting request's task publishes its answers again after a failure."""
logger = logging.getLogger("discospace.sampler")


async def _unknown() -> int | None:
    return None


@dataclass(frozen=True)
class SamplerDeps:
    """What the sampler's handlers work with."""

    state: SamplerState
    metrics: SamplerMetrics
    publish: Callable[[Event], Awaitable[None]]
    """Sends an answer to its topic."""
    clock: Clock
    space_wait_s: float
    first_request_wait_s: float
    in_flight_wait_s: float = 60.0
    spaces_behind: Callable[[], Awaitable[int | None]] = _unknown
    """How many records of the spaces topic the sampler has yet to read (None: cannot say)."""
    waiting: set[asyncio.Task[None]] = field(default_factory=set)
    """The tasks of the requests whose pairs wait for a measurement in flight."""

    async def stop_waiting(self) -> None:
        """Cancel the waiting tasks (at stop): their requests' offsets stay uncommitted, so
        the next sampler answers them."""
        for task in list(self.waiting):
            task.cancel()
        await asyncio.gather(*self.waiting, return_exceptions=True)


async def on_space_event(event: SpaceRegistered | SpaceRejected, deps: SamplerDeps) -> None:
    if isinstance(event, SpaceRegistered):
        evolve_space(deps.state, event)


async def on_actuator_registered(event: ActuatorRegistered, deps: SamplerDeps) -> None:
    evolve_pools(deps.state, event)
    deps.metrics.show_pool(event.pool)


async def on_measurement_event(event: MeasurementEvent, deps: SamplerDeps) -> None:
    """Fold the memo and what is in flight; answer the pairs that waited on this measurement."""
    answers: list[Answer] = []
    if isinstance(event, MeasurementStarted):
        evolve_started(deps.state, event)
    elif isinstance(event, MeasurementCompleted):
        answers += land(deps.state, event, deps.clock())
    elif isinstance(event, MeasurementFailed):
        answers += fail(deps.state, event, deps.clock())
    for answer in answers:  # published by the waiting request's task, which holds its offset
        deps.state.owed.setdefault(answer.causation_id or "", []).append(answer)


async def fold_requests_sent(deps: SamplerDeps, bootstrap_servers: str, topics: TopicNames) -> None:
    """At start, once the followers folded (pools and memo known): read back every request sent
    to a known pool's topic, so that a measurement sent before this sampler started and not
    landed yet is in flight here too, and a second request for its pair waits for it instead of
    measuring it again (a sampler killed with measurements queued would forget them)."""
    pools = deps.state.pools.names
    if not pools:
        return

    def fold(event: Event) -> None:
        if isinstance(event, MeasurementRequested):
            hold_sent(deps.state, event)

    measure_topics = [topics.measure(pool) for pool in pools]
    report = await replay(
        bootstrap_servers, measure_topics, fold, client_id="discospace-sampler-sent"
    )
    logger.info(
        "read back %d requests sent to %d pools: %d measurements in flight",
        report.events,
        len(pools),
        len(deps.state.in_flight),
    )


async def on_request_read(
    event: SamplesRequested | OperationCompleted | OperationFailed, deps: SamplerDeps
) -> None:
    """Every request for samples in log order (the first of each index wins), and the ends
    of operations."""
    if not isinstance(event, SamplesRequested):
        deps.state.requests.end(event.operation_id)
        end(deps.state, event.operation_id)
    elif deps.state.requests.record(event) is Verdict.CONFLICT:
        deps.metrics.conflicting_requests.inc()
        logger.warning(
            "request %d of operation %s conflicts with the first one in the log: ignored",
            event.request_index,
            event.operation_id,
        )


async def on_samples_requested(event: SamplesRequested, deps: SamplerDeps) -> None:
    verdict = await deps.state.requests.wait_for(event, deps.first_request_wait_s)
    if verdict is Verdict.ENDED:
        logger.info(
            "request %d of operation %s came after the operation ended: not answered",
            event.request_index,
            event.operation_id,
        )
    if verdict is not Verdict.FIRST:
        return
    await _space_registered(deps.state, event.space_id, deps.space_wait_s)
    if event.space_id not in deps.state.spaces:
        behind = await deps.spaces_behind()
        if behind != 0:  # it may be among what is not read yet: wait for it, not dead-letter
            unread = "an unknown number of" if behind is None else str(behind)
            raise TransientError(
                f"space '{event.space_id}' is not read yet: {unread} records of the spaces "
                "topic are still to be read"
            )
    answers = take(deps.state, decide(deps.state, event, deps.clock()))
    try:
        await asyncio.gather(*(deps.publish(answer) for answer in answers))
    except BaseException:  # delivered again, and decided again: nothing of this one waits
        deps.state.in_flight.release(event.event_id)
        deps.state.owed.pop(event.event_id, None)
        raise
    deps.metrics.observe(answers)
    if _waits(event, deps.state):
        release = hold_commit()  # last: nothing below may raise
        # a context of its own: its sends are confirmed where they are made (the handler's
        # are confirmed before its commit), so a failed one is seen and sent again
        task = asyncio.create_task(
            _answer_waiting(event, deps, release), context=contextvars.Context()
        )
        deps.waiting.add(task)
        task.add_done_callback(deps.waiting.discard)


def _waits(event: SamplesRequested, state: SamplerState) -> bool:
    """Whether pairs of the request wait, or answers they waited for are still to publish."""
    return bool(state.in_flight.waiting_for(event.event_id) or state.owed.get(event.event_id))


async def _answer_waiting(
    event: SamplesRequested, deps: SamplerDeps, release: Callable[[], None]
) -> None:
    """Publish the answers the awaited measurements bring to the request's waiting pairs; at
    most `in_flight_wait_s` after it was handled, send the pairs still waiting to a pool (so no
    request waits for as long as a measurement may run); then release its offset. Cancelled
    (the service stops), it releases nothing: the request is delivered again."""
    deadline = time.monotonic() + deps.in_flight_wait_s
    state = deps.state
    while _waits(event, state):
        owed = state.owed.pop(event.event_id, [])
        if owed:
            await _publish_until_done(owed, event, deps)
            continue
        if time.monotonic() >= deadline:
            answers = stop_waiting(state, event.event_id, deps.clock())
            logger.info(
                "request %d of operation %s waited %.0f s for measurements in flight: "
                "%d pairs sent to a pool instead",
                event.request_index,
                event.operation_id,
                deps.in_flight_wait_s,
                len(answers),
            )
            state.owed.setdefault(event.event_id, []).extend(answers)
            continue
        await asyncio.sleep(WAITING_POLL_S)
    release()


async def _publish_until_done(
    answers: list[Answer], event: SamplesRequested, deps: SamplerDeps
) -> None:
    """Publish each of `answers`, again after a transient failure (the broker away: the
    request's offset stays held meanwhile); one that fails for good (too large for a message)
    is logged and dropped, so the request's offset is released all the same."""
    for answer in answers:
        doing = f"publishing answer {answer.type}"
        publish = functools.partial(_publish, [answer], deps)
        try:
            await until_done(publish, doing, PUBLISH_RETRY_S, logger, retry_if=is_transient)
        except Exception as error:
            logger.error(
                "answer %s to request %d of operation %s cannot be published, dropped: %s",
                answer.event_id,
                event.request_index,
                event.operation_id,
                error,
            )


async def _publish(answers: list[Answer], deps: SamplerDeps) -> None:
    """Publish the deferred answers of waiting pairs."""
    await asyncio.gather(*(deps.publish(answer) for answer in answers))
    deps.metrics.observe_pairs(answers)


async def _space_registered(state: SamplerState, space_id: str, wait_s: float) -> None:
    """Give the spaces follower up to `wait_s` to read a space registered moments ago."""
    deadline = time.monotonic() + wait_s
    while space_id not in state.spaces and time.monotonic() < deadline:
        await asyncio.sleep(SPACE_POLL_S)
