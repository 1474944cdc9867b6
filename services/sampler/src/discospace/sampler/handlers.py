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
  measurement in flight returns only once every one is answered (or its operation ended), so
  its offset is committed only then: a sampler that restarts meanwhile answers it again, with
  the same ids.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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
from discospace.runtime.replay import replay
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
logger = logging.getLogger("discospace.sampler")


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
    await _publish(answers, deps)


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
    answers = take(deps.state, decide(deps.state, event, deps.clock()))
    await asyncio.gather(*(deps.publish(answer) for answer in answers))
    deps.metrics.observe(answers)
    await _wait_for_measurements_in_flight(event, deps)


async def _wait_for_measurements_in_flight(event: SamplesRequested, deps: SamplerDeps) -> None:
    """Hold the request (uncommitted) while pairs of it wait for another's measurement, for at
    most `in_flight_wait_s`; then measure those pairs anyway, so no request blocks its
    partition for as long as a measurement may run."""
    deadline = time.monotonic() + deps.in_flight_wait_s
    while deps.state.in_flight.waiting_for(event.event_id):
        if time.monotonic() >= deadline:
            answers = stop_waiting(deps.state, event.event_id, deps.clock())
            logger.info(
                "request %d of operation %s waited %.0f s for measurements in flight: "
                "%d pairs sent to a pool instead",
                event.request_index,
                event.operation_id,
                deps.in_flight_wait_s,
                len(answers),
            )
            await _publish(answers, deps)
            return
        await asyncio.sleep(WAITING_POLL_S)


async def _publish(answers: list[Answer], deps: SamplerDeps) -> None:
    """Publish the deferred answers of waiting pairs."""
    await asyncio.gather(*(deps.publish(answer) for answer in answers))
    deps.metrics.observe_pairs(answers)


async def _space_registered(state: SamplerState, space_id: str, wait_s: float) -> None:
    """Give the spaces follower up to `wait_s` to read a space registered moments ago."""
    deadline = time.monotonic() + wait_s
    while space_id not in state.spaces and time.monotonic() < deadline:
        await asyncio.sleep(SPACE_POLL_S)
