"""The explorer at run time: decisions published in order, again when the broker refuses, and
retries published by the timer when their backoff ends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from discospace.events import Event, MeasurementFailed, OperationStarted, SamplesRequested
from discospace.explorer.domain.decide import Engine, Timing
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.explorer.service.live import LiveExplorer
from discospace.explorer.service.metrics import ExplorerMetrics


def _now() -> datetime:
    return datetime.now(UTC)


class Broker:
    """A fake publisher that refuses the first `refusals` attempts."""

    def __init__(self, refusals: int = 0) -> None:
        self.refusals = refusals
        self.published: list[Event] = []

    async def __call__(self, event: Event) -> None:
        if self.refusals:
            self.refusals -= 1
            raise ConnectionError("broker unavailable")
        self.published.append(event)


def _explorer(
    broker: Broker, backoff_s: float = 0.05, metrics: ExplorerMetrics | None = None
) -> LiveExplorer:
    engine = Engine(OperatorRegistry([RandomWalk()]), Timing(backoff_s, 1.0, 30.0))
    return LiveExplorer(engine, broker, _now, metrics=metrics, publish_retry_s=0.01)


async def test_the_active_operations_gauge_reads_what_the_explorer_decides_for_when_scraped(
    small_space, make_request
):
    registry = CollectorRegistry()
    explorer = _explorer(Broker(), metrics=ExplorerMetrics.create(registry))

    def active() -> float | None:
        return registry.get_sample_value("discospace_operations_active")

    explorer.fold(small_space)
    explorer.fold(make_request(small_space, batch_size=2))
    assert active() == 0  # replaying: deciding for nothing yet
    await explorer.go_live()
    assert active() == 1
    await explorer.handle(make_request(small_space, "op-2", batch_size=2))
    assert active() == 2
    explorer.state.owns = lambda operation_id: operation_id == "op-2"  # no event, no decision
    assert active() == 1
    await explorer.release()
    assert active() == 0
    await explorer.stop()


async def test_decisions_the_broker_refuses_are_published_again_in_order(small_space, make_request):
    broker = Broker(refusals=3)
    explorer = _explorer(broker)
    await explorer.go_live()
    await explorer.handle(small_space)
    await explorer.handle(make_request(small_space, batch_size=2))
    await explorer.stop()
    assert [type(e) for e in broker.published] == [OperationStarted, SamplesRequested]


async def test_nothing_is_published_before_going_live_and_everything_due_is_after(
    small_space, make_request
):
    broker = Broker()
    explorer = _explorer(broker)
    explorer.fold(small_space)
    explorer.fold(make_request(small_space, batch_size=2))
    assert broker.published == []
    await explorer.go_live()
    await explorer.stop()
    assert [type(e) for e in broker.published] == [OperationStarted, SamplesRequested]


async def test_a_retry_is_published_by_the_timer_once_its_backoff_has_passed(
    small_space, make_request, make_fakes
):
    broker = Broker()
    explorer = _explorer(broker, backoff_s=0.2)
    await explorer.go_live()
    await explorer.handle(small_space)
    await explorer.handle(make_request(small_space, number_entities=1, batch_size=1))
    draw = broker.published[-1]
    assert isinstance(draw, SamplesRequested)
    drawn, [pending] = make_fakes(small_space).draw(draw, _now())
    failure = make_fakes(small_space).result_of(pending, "fail", True, _now())
    assert isinstance(failure, MeasurementFailed)
    await explorer.handle(drawn)
    await explorer.handle(failure)
    assert len(broker.published) == 2
    await asyncio.sleep(0.1)
    assert len(broker.published) == 2
    await asyncio.sleep(0.4)
    await explorer.stop()
    retry = broker.published[-1]
    assert isinstance(retry, SamplesRequested)
    assert (retry.attempt, retry.points) == (2, (pending.entity,))
