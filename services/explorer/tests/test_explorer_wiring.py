"""The explorer's shell, in memory: events in through its consumer, decisions out; and its
handlers alone, over hand-built parts, without the app."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from faststream.kafka import TestKafkaBroker
from faststream.message import StreamMessage
from pydantic import ValidationError

from discospace.events import (
    Event,
    OperationStarted,
    SamplesRequested,
    TopicNames,
    decode,
    encode,
)
from discospace.explorer.app import create_app
from discospace.explorer.domain.decide import Engine, Timing
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.explorer.service.handlers import (
    ExplorerDeps,
    on_operation_event,
    on_space_registered,
)
from discospace.explorer.service.live import LiveExplorer
from discospace.explorer.service.ownership import Ownership
from discospace.explorer.settings import ExplorerSettings
from discospace.runtime.positions import ReadPositions


async def _event(message: StreamMessage[Any]) -> Event:
    return decode(message.body)


async def test_in_memory_a_request_on_a_registered_space_is_answered_with_its_first_draw(
    small_space, make_request
):
    topics = TopicNames.unique("explorer")
    service = create_app(ExplorerSettings(topic_prefix=topics.prefix))
    explorer = service.state
    assert isinstance(explorer, LiveExplorer)
    seen: list[Event] = []

    @service.broker.subscriber(topics.operations, group_id="observer", decoder=_event)
    async def observe(event: Event) -> None:
        seen.append(event)

    request = make_request(small_space, batch_size=3, seed=5)
    async with TestKafkaBroker(service.broker) as broker:
        await explorer.go_live()
        await broker.publish(encode(small_space), topics.spaces, key=small_space.key())
        await broker.publish(encode(request), topics.operations, key=request.key())
        await explorer.stop()

    [started] = [e for e in seen if isinstance(e, OperationStarted)]
    [first] = [e for e in seen if isinstance(e, SamplesRequested)]
    assert len(seen) == 3
    assert (first.count, first.position, first.seed) == (3, 0, 5)
    assert explorer.state.operations["op-1"].started == started


async def test_in_memory_nothing_is_decided_before_the_explorer_goes_live(
    small_space, make_request
):
    topics = TopicNames.unique("explorer")
    service = create_app(ExplorerSettings(topic_prefix=topics.prefix))
    seen: list[Event] = []

    @service.broker.subscriber(topics.operations, group_id="observer", decoder=_event)
    async def observe(event: Event) -> None:
        seen.append(event)

    request = make_request(small_space)
    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish(encode(small_space), topics.spaces, key=small_space.key())
        await broker.publish(encode(request), topics.operations, key=request.key())

    assert seen == [request]
    assert service.state.state.operations["op-1"].requested == request


def _deps(published: list[Event]) -> ExplorerDeps:
    """The explorer's parts built by hand: a fake publisher, no broker, no app."""

    async def publish(event: Event) -> None:
        published.append(event)

    engine = Engine(OperatorRegistry([RandomWalk()]), Timing(1.0, 8.0, 30.0))
    explorer = LiveExplorer(engine, publish, lambda: datetime.now(UTC))
    settings, positions = ExplorerSettings(topic_prefix="handlers"), ReadPositions()
    return ExplorerDeps(settings, explorer, Ownership(settings, explorer, positions), positions)


async def test_the_handlers_fold_and_decide_over_their_parts_without_the_app(
    small_space, make_request
):
    published: list[Event] = []
    deps = _deps(published)

    await on_space_registered(small_space, deps)
    await on_operation_event(make_request(small_space, batch_size=2, seed=5), deps)
    assert published == []
    await deps.explorer.go_live()
    await deps.explorer.stop()

    started, first = published
    assert isinstance(started, OperationStarted)
    assert isinstance(first, SamplesRequested)
    assert (first.count, first.seed) == (2, 5)


def test_the_explorer_settings_give_the_engine_its_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCOSPACE_EXPLORER_CANCEL_WAIT_S", "42")
    monkeypatch.setenv("DISCOSPACE_EXPLORER_SPACE_WAIT_S", "7")

    timing = ExplorerSettings().timing

    assert (timing.cancel_wait_s, timing.space_wait_s) == (42.0, 7.0)


@pytest.mark.parametrize(
    "variable", ["SPACE_WAIT_S", "CANCEL_WAIT_S", "MEASUREMENT_RETRY_BACKOFF_MAX_S"]
)
def test_a_wait_no_date_can_hold_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """1e12 s was accepted: every operation request then raised OverflowError in the decision
    (never started, never failed), and a cancelled operation failed instead of completing."""
    monkeypatch.setenv(f"DISCOSPACE_EXPLORER_{variable}", "1e12")

    with pytest.raises(ValidationError, match="less than or equal to 1000000000"):
        ExplorerSettings()
