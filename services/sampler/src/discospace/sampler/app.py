"""The sampler's wiring: sample requests in; drawn entities, requests to pools, reuses out.

Spaces, pools, the memo and the first request of every slot are folded by replaying consumers
(every start reads their topics from the beginning); requests wait until those have caught up
with where the topics ended at start (see `catchup.py`), then wait briefly for a space
registered since. A request is answered only when it is the first of its operation and request
index in the log and its operation has not ended there (see `first.py`). A request's offset is
committed only after every answer is published.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    MeasurementStarted,
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    OperationStarted,
    SamplesDrawn,
    SamplesRequested,
    SpaceRegistered,
    SpaceRejected,
)
from discospace.events.factory import Clock, utc_now
from discospace.runtime import EventPublisher, Service, create_service
from discospace.runtime.positions import end_offsets
from discospace.sampler.catchup import CatchUp
from discospace.sampler.domain import (
    SamplerState,
    decide,
    evolve_memo,
    evolve_pools,
    evolve_space,
)
from discospace.sampler.first import Verdict
from discospace.sampler.metrics import SamplerMetrics
from discospace.sampler.settings import SamplerSettings

DESCRIPTION = (
    "Turns SamplesRequested into entities drawn from the space without materialising it, "
    "reuses what the shared sample store already measured, and routes MeasurementRequested "
    "to the measure topic of a pool that runs the experiment."
)

MeasurementEvent: TypeAlias = (
    MeasurementStarted | MeasurementCompleted | MeasurementFailed | MeasurementReused
)
SPACE_POLL_S = 0.05
logger = logging.getLogger("discospace.sampler")


def create_app(settings: SamplerSettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The sampler service, ready to run."""
    settings = settings or SamplerSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    state = service.state = SamplerState()
    metrics = SamplerMetrics.create(service.metrics.registry, lambda: len(state.memo))
    catch_up = CatchUp()
    service.broker.add_middleware(catch_up.middleware)
    publish = _publishers(service)
    topics = service.topics
    replayed = (topics.spaces, topics.actuators, topics.measurements, topics.operations)

    @service.on_startup
    async def note_where_topics_end() -> None:
        catch_up.arm(await end_offsets(settings.kafka_bootstrap_servers, replayed))

    @service.consumer(topics.spaces, replay=True, description="Registered spaces.")
    async def on_space_event(event: SpaceRegistered | SpaceRejected) -> None:
        if isinstance(event, SpaceRegistered):
            evolve_space(state, event)

    @service.consumer(topics.actuators, replay=True, description="Pools and their experiments.")
    async def on_actuator_registered(event: ActuatorRegistered) -> None:
        evolve_pools(state, event)

    @service.consumer(topics.measurements, replay=True, description="The sample stores' memo.")
    async def on_measurement_event(event: MeasurementEvent) -> None:
        if isinstance(event, MeasurementCompleted):
            evolve_memo(state, event)

    @service.consumer(
        topics.operations,
        replay=True,
        deduplicate=False,
        description="Every request for samples, in log order: the first of each index wins.",
    )
    async def on_request_read(
        event: SamplesRequested | OperationCompleted | OperationFailed,
    ) -> None:
        if not isinstance(event, SamplesRequested):
            state.requests.end(event.operation_id)
        elif state.requests.record(event) is Verdict.CONFLICT:
            metrics.conflicting_requests.inc()
            logger.warning(
                "request %d of operation %s conflicts with the first one in the log: ignored",
                event.request_index,
                event.operation_id,
            )

    requests = service.consumer(topics.operations, description="Requests for more samples.")

    @requests
    async def on_samples_requested(event: SamplesRequested) -> None:
        await catch_up.wait(settings.catch_up_timeout_s)
        verdict = await state.requests.wait_for(event, settings.first_request_wait_s)
        if verdict is Verdict.ENDED:
            logger.info(
                "request %d of operation %s came after the operation ended: not answered",
                event.request_index,
                event.operation_id,
            )
        if verdict is not Verdict.FIRST:
            return
        await _space_registered(state, event.space_id, settings.space_wait_s)
        answers = decide(state, event, service.clock())
        await asyncio.gather(*(publish(answer) for answer in answers))
        metrics.observe(answers)

    @requests
    async def on_other_operation_event(
        event: OperationRequested
        | OperationCancelRequested
        | OperationStarted
        | SamplesDrawn
        | OperationCompleted
        | OperationFailed,
    ) -> None:
        """Nothing to answer; taken so that this consumer, too, passes no message of the
        operations topic before the catch-up (its position would count as the replay's)."""
        await catch_up.wait(settings.catch_up_timeout_s)

    return service


def _publishers(service: Service) -> Callable[[Event], Awaitable[None]]:
    """One `publish(event)` that sends each answer to its topic."""
    topics = service.topics
    to_operations = service.publisher(
        topics.operations, SamplesDrawn, description="Which entities each request drew."
    )
    to_measure = service.publisher(
        f"{topics.prefix}.measure.{{pool}}",
        MeasurementRequested,
        description="Measurement requests, one topic per GPU pool.",
        route=lambda event: event.topic(topics),
    )
    to_measurements = service.publisher(
        topics.measurements,
        MeasurementReused,
        MeasurementFailed,
        description="Measurements reused from the sample store, and pairs no pool can take.",
    )
    by_type: dict[type[Event], EventPublisher] = {
        SamplesDrawn: to_operations,
        MeasurementRequested: to_measure,
        MeasurementReused: to_measurements,
        MeasurementFailed: to_measurements,
    }

    async def publish(event: Event) -> None:
        await by_type[type(event)](event)

    return publish


async def _space_registered(state: SamplerState, space_id: str, wait_s: float) -> None:
    """Give the spaces consumer up to `wait_s` to read a space registered moments ago."""
    deadline = time.monotonic() + wait_s
    while space_id not in state.spaces and time.monotonic() < deadline:
        await asyncio.sleep(SPACE_POLL_S)
