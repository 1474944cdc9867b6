"""The sampler's handlers called on their own, with hand-built parts: no app, no broker."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka.errors import KafkaConnectionError
from prometheus_client import CollectorRegistry

from discospace.core import ExperimentRef
from discospace.events import Event, MeasurementRequested, MeasurementReused, SamplesDrawn
from discospace.runtime import TransientError, is_transient
from discospace.sampler import handlers
from discospace.sampler.domain import SamplerState, UnknownSpaceError
from discospace.sampler.handlers import (
    SamplerDeps,
    on_actuator_registered,
    on_measurement_event,
    on_request_read,
    on_samples_requested,
    on_space_event,
)
from discospace.sampler.metrics import SamplerMetrics

BENCH = ExperimentRef(actuator="synthetic", experiment="bench")


@dataclass
class Parts:
    """Hand-built parts: answers land in a list, metrics in a registry of their own."""

    clock: Any
    published: list[Event] = field(default_factory=list)
    failures: list[Exception] = field(default_factory=list)
    """Errors the next publishes raise, one each."""
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        state = SamplerState()
        self.deps = SamplerDeps(
            state=state,
            metrics=SamplerMetrics.create(self.registry, lambda: len(state.memo)),
            publish=self.publish,
            clock=self.clock,
            space_wait_s=0.0,
            first_request_wait_s=0.0,
        )

    async def publish(self, event: Event) -> None:
        if self.failures:
            raise self.failures.pop()
        self.published.append(event)

    def sample(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


@pytest.mark.parametrize(
    ("behind", "raised"),
    [(3, TransientError), (None, TransientError), (0, UnknownSpaceError)],
    ids=["behind", "cannot-say", "read-up"],
)
async def test_a_request_for_a_space_not_read_yet_waits_unless_the_spaces_topic_is_read_up(
    clock, make, behind: int | None, raised: type[Exception]
):
    """A request for a space the spaces follower had not read within `space_wait_s` failed as
    poison and was dead-lettered after a few tries: its operation then waited forever for an
    answer, though the space was registered. Only a sampler that has read the whole spaces
    topic can say the space is unknown."""
    parts = Parts(clock)

    async def spaces_behind() -> int | None:
        return behind

    deps = dataclasses.replace(parts.deps, spaces_behind=spaces_behind)
    request = make.request(make.registered())
    await on_request_read(request, deps)

    with pytest.raises(raised) as caught:
        await on_samples_requested(request, deps)
    assert is_transient(caught.value) is (raised is TransientError)
    if behind == 3:
        assert "is not read yet: 3 records of the spaces topic are still to be read" in str(
            caught.value
        )
    assert parts.published == []


async def test_a_request_is_answered_from_what_the_fold_handlers_were_given(clock, make):
    parts = Parts(clock)
    space = make.registered()
    measured, fresh = {"batch_size": 2, "gpu_model": "A100"}, {"batch_size": 4, "gpu_model": "A100"}
    memo = make.completed(measured)
    request = make.request(space, points=(measured, fresh), experiments=(BENCH,))

    await on_space_event(space, parts.deps)
    await on_actuator_registered(make.pool("a100", "A100"), parts.deps)
    await on_measurement_event(memo, parts.deps)
    await on_request_read(request, parts.deps)
    await on_samples_requested(request, parts.deps)

    drawn, *pairs = parts.published
    assert isinstance(drawn, SamplesDrawn)
    assert [(type(e), e.entity_values) for e in pairs] == [
        (MeasurementReused, measured),
        (MeasurementRequested, fresh),
    ]
    assert parts.sample("discospace_memo_hits_total") == 1


async def test_a_rival_request_read_after_the_first_of_its_index_is_counted_and_not_answered(
    clock, make
):
    parts = Parts(clock)
    space = make.registered()
    first = make.request(space, request_index=0, count=1)
    rival = make.request(space, request_index=0, count=3)
    await on_space_event(space, parts.deps)

    await on_request_read(first, parts.deps)
    await on_request_read(rival, parts.deps)
    await on_samples_requested(rival, parts.deps)

    assert parts.published == []
    assert parts.sample("discospace_sampler_conflicting_requests_total") == 1


async def test_a_waiting_request_returns_at_once_and_its_task_answers_once_its_pair_lands(
    clock, make
):
    """Waiting in the handler stopped the sampler's whole consumer: every other operation's
    requests waited up to `in_flight_wait_s` too."""
    parts = Parts(clock)
    await on_space_event(make.registered(), parts.deps)
    await on_actuator_registered(make.pool("a100", "A100"), parts.deps)
    point, other = {"batch_size": 2, "gpu_model": "A100"}, {"batch_size": 4, "gpu_model": "A100"}
    first, second, third = (
        make.request(make.registered(), operation_id=op, points=(values,))
        for op, values in (("op-a", point), ("op-b", point), ("op-c", other))
    )
    for request in (first, second, third):
        await on_request_read(request, parts.deps)
    await on_samples_requested(first, parts.deps)

    await asyncio.wait_for(on_samples_requested(second, parts.deps), 1)  # returns, waiting
    [waiting] = parts.deps.waiting
    await asyncio.wait_for(on_samples_requested(third, parts.deps), 1)  # answered meanwhile
    await asyncio.sleep(0.1)
    assert not waiting.done()
    answered = {(type(e).__name__, e.operation_id) for e in parts.published}
    assert ("MeasurementRequested", "op-c") in answered
    assert ("MeasurementReused", "op-b") not in answered

    await on_measurement_event(make.completed(point, operation="op-a"), parts.deps)
    await asyncio.wait_for(waiting, 2)
    kinds = [
        (type(e).__name__, e.operation_id) for e in parts.published if e.operation_id == "op-b"
    ]
    assert sorted(kinds) == [("MeasurementReused", "op-b"), ("SamplesDrawn", "op-b")]
    assert parts.deps.state.owed == {}


async def test_a_request_waits_at_most_in_flight_wait_s_then_its_pair_is_measured(clock, make):
    parts = Parts(clock)
    parts.deps = dataclasses.replace(parts.deps, in_flight_wait_s=0.2)
    await on_space_event(make.registered(), parts.deps)
    await on_actuator_registered(make.pool("a100", "A100"), parts.deps)
    point = {"batch_size": 2, "gpu_model": "A100"}
    first, second = (
        make.request(make.registered(), operation_id=op, points=(point,)) for op in ("op-a", "op-b")
    )
    for request in (first, second):
        await on_request_read(request, parts.deps)
    await on_samples_requested(first, parts.deps)

    await asyncio.wait_for(on_samples_requested(second, parts.deps), 1)
    await asyncio.wait_for(asyncio.gather(*parts.deps.waiting), 2)

    kinds = [(type(e).__name__, e.operation_id) for e in parts.published[2:]]
    assert sorted(kinds) == [("MeasurementRequested", "op-b"), ("SamplesDrawn", "op-b")]


async def test_an_answer_the_waiting_task_could_not_publish_is_published_when_it_can(
    clock, make, monkeypatch
):
    """The memo's follower hands the answer over; a failed publish is tried again by the task
    that holds the request's offset (it was lost with the follower's message before)."""
    monkeypatch.setattr(handlers, "PUBLISH_RETRY_S", 0.01)
    parts = Parts(clock)
    await on_space_event(make.registered(), parts.deps)
    await on_actuator_registered(make.pool("a100", "A100"), parts.deps)
    point = {"batch_size": 2, "gpu_model": "A100"}
    first, second = (
        make.request(make.registered(), operation_id=op, points=(point,)) for op in ("op-a", "op-b")
    )
    for request in (first, second):
        await on_request_read(request, parts.deps)
    await on_samples_requested(first, parts.deps)
    await on_samples_requested(second, parts.deps)
    [waiting] = parts.deps.waiting

    parts.failures.append(KafkaConnectionError("the broker went away"))
    await on_measurement_event(make.completed(point, operation="op-a"), parts.deps)
    await asyncio.wait_for(waiting, 2)
    assert [type(e).__name__ for e in parts.published if e.operation_id == "op-b"][-1] == (
        "MeasurementReused"
    )


async def test_an_answer_that_fails_for_good_is_dropped_and_the_request_is_let_go(clock, make):
    """Tried again forever, it held the partition's commit until the sampler restarted."""
    parts = Parts(clock)
    await on_space_event(make.registered(), parts.deps)
    await on_actuator_registered(make.pool("a100", "A100"), parts.deps)
    point = {"batch_size": 2, "gpu_model": "A100"}
    first, second = (
        make.request(make.registered(), operation_id=op, points=(point,)) for op in ("op-a", "op-b")
    )
    for request in (first, second):
        await on_request_read(request, parts.deps)
    await on_samples_requested(first, parts.deps)
    await on_samples_requested(second, parts.deps)
    [waiting] = parts.deps.waiting

    too_large = ValueError("MeasurementReused is 2000000 bytes as a message")
    parts.failures.extend([too_large] * 50)  # it would fail every time
    await on_measurement_event(make.completed(point, operation="op-a"), parts.deps)
    await asyncio.wait_for(waiting, 2)
    assert parts.deps.state.owed == {}
    assert len(parts.failures) == 49, "tried once"


async def test_a_request_whose_answers_could_not_be_published_leaves_nothing_waiting(clock, make):
    """It is delivered again and decided anew; its first decision's waiters would otherwise
    stay, and what they are owed be kept for no one."""
    parts = Parts(clock)
    await on_space_event(make.registered(), parts.deps)
    await on_actuator_registered(make.pool("a100", "A100"), parts.deps)
    point = {"batch_size": 2, "gpu_model": "A100"}
    first, second = (
        make.request(make.registered(), operation_id=op, points=(point,)) for op in ("op-a", "op-b")
    )
    for request in (first, second):
        await on_request_read(request, parts.deps)
    await on_samples_requested(first, parts.deps)

    parts.failures.append(KafkaConnectionError("the broker went away"))
    with pytest.raises(KafkaConnectionError):
        await on_samples_requested(second, parts.deps)
    assert parts.deps.state.in_flight.waiting_for(second.event_id) == 0
    assert parts.deps.waiting == set()
