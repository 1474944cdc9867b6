"""Several explorers on one log: each decides for its own operations, and when two decisions
compete for one slot of an operation, the first in the log wins everywhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry

from discospace.events import (
    Event,
    OperationCompleted,
    OperationFailed,
    OperationStarted,
    SamplesRequested,
    decode,
    encode,
)
from discospace.explorer.domain.decide import Engine, Timing
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.domain.state import ExplorerState, explore, go_live, tick
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.explorer.service.conflicts import Reading, read_decision
from discospace.explorer.service.live import LiveExplorer
from discospace.explorer.service.metrics import ExplorerMetrics

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
ENGINE = Engine(OperatorRegistry([RandomWalk()]), Timing(1.0, 8.0, 30.0))


def _owner_of(*operations: str):
    return lambda operation_id: operation_id in operations


def _fold(state: ExplorerState, events: list[Event]) -> list[Event]:
    decided: list[Event] = []
    for event in events:
        decided += explore(state, event, ENGINE, T0).events  # type: ignore[arg-type]
    return decided


def _content(event: Event) -> dict:
    return event.model_dump(exclude={"occurred_at"})


class Broker:
    def __init__(self) -> None:
        self.published: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.published.append(event)


def _live(history=None) -> tuple[LiveExplorer, Broker, ExplorerMetrics]:
    broker = Broker()
    metrics = ExplorerMetrics.create(CollectorRegistry())
    explorer = LiveExplorer(ENGINE, broker, lambda: T0, metrics, 0.01, history)
    return explorer, broker, metrics


def _count(counter, **labels: str) -> float:
    return counter.labels(**labels)._value.get() if labels else counter._value.get()


def test_every_operation_is_folded_but_only_those_owned_are_decided_for(small_space, make_request):
    state = ExplorerState(owns=_owner_of("op-1"))
    go_live(state, ENGINE, T0)
    mine, theirs = make_request(small_space, "op-1"), make_request(small_space, "op-2")

    decided = _fold(state, [small_space, mine, theirs])

    assert {d.operation_id for d in decided} == {"op-1"}
    assert [type(d) for d in decided] == [OperationStarted, SamplesRequested]
    assert state.operations["op-2"].requested == theirs
    assert state.operations["op-2"].started is None
    assert tick(state, ENGINE, T0 + timedelta(hours=1)).events == []


def test_an_operation_given_to_another_explorer_goes_on_where_its_owner_left_it(
    loop, eighty_space, make_request
):
    owner = loop(eighty_space)
    owner.send(make_request(eighty_space, batch_size=4, seed=8))
    for _ in range(6):
        owner.answer_draws()
        owner.measure_next()
    owner.answer_draws()
    heir = ExplorerState(owns=_owner_of())
    go_live(heir, ENGINE, owner.now)
    assert _fold(heir, owner.log) == []

    heir.owns = _owner_of("op-1")
    taken_over = tick(heir, ENGINE, owner.now).events
    logged = len(owner.log)
    expected = owner.measure_next()
    measured = owner.log[logged]

    assert taken_over == [], "the owner had decided everything it could: nothing is repeated"
    assert expected
    assert [_content(d) for d in _fold(heir, [measured])] == [_content(e) for e in expected]


async def test_a_later_request_for_an_index_already_decided_is_ignored_and_counted(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=3, seed=2))
    first = sim.decisions(SamplesRequested)[0]
    rival = first.model_copy(update={"count": 1})
    explorer, broker, metrics = _live()

    for event in sim.log:
        await explorer.handle(event)  # type: ignore[arg-type]
    await explorer.handle(rival)

    assert read_decision(explorer.state, rival) is Reading.CONFLICT
    assert explorer.state.operations["op-1"].requests[0] == first
    assert _count(metrics.conflicting_decisions, event_type="SamplesRequested") == 1
    assert broker.published == []


async def test_its_own_decisions_read_back_from_the_log_are_confirmed(small_space, make_request):
    explorer, broker, metrics = _live()
    await explorer.go_live()
    await explorer.handle(small_space)
    await explorer.handle(make_request(small_space, batch_size=2))
    operation = explorer.state.operations["op-1"]
    assert len(operation.unconfirmed) == 2

    for decision in list(broker.published):
        await explorer.handle(decode(encode(decision)))  # type: ignore[arg-type]
    await explorer.stop()

    assert operation.unconfirmed == set()
    assert len(broker.published) == 2
    assert _count(metrics.conflicting_decisions, event_type="SamplesRequested") == 0


async def test_an_explorer_whose_own_decision_lost_rebuilds_the_operation_from_the_log(
    small_space, make_request
):
    request = make_request(small_space, batch_size=3, seed=2)
    log: list[Event] = [small_space, request]

    async def history(operation_id: str):
        return [e for e in log if getattr(e, "operation_id", None) == operation_id]

    explorer, broker, metrics = _live(history)
    await explorer.go_live()
    for event in log:
        await explorer.handle(event)  # type: ignore[arg-type]
    started, mine = broker.published
    assert isinstance(mine, SamplesRequested)
    assert mine.count == 3
    theirs = mine.model_copy(update={"count": 2})
    log.append(started)

    await explorer.handle(started)  # type: ignore[arg-type]
    await explorer.handle(theirs)  # another replica's, first in the log
    await explorer.handle(mine)  # its own, published after theirs: a later conflicting one
    await explorer.stop()

    operation = explorer.state.operations["op-1"]
    assert operation.requests[0].fingerprint() == theirs.fingerprint()
    assert operation.draws.waiting == {0: 2, 1: 1}
    [refill] = broker.published[2:]
    assert isinstance(refill, SamplesRequested)
    assert (refill.request_index, refill.position, refill.count) == (1, 2, 1)
    assert _count(metrics.rebuilt_operations) == 1
    assert _count(metrics.conflicting_decisions, event_type="SamplesRequested") == 1


def test_a_second_start_of_an_operation_is_ignored(loop, small_space, make_request):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=2))
    [started] = sim.decisions(OperationStarted)
    state = ExplorerState()
    _fold(state, sim.log)
    late = started.model_copy(update={"occurred_at": started.occurred_at + timedelta(seconds=9)})

    assert read_decision(state, late) is Reading.CONFLICT
    assert state.operations["op-1"].started == started


def test_the_first_end_of_an_operation_in_the_log_wins(loop, small_space, make_request):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=2))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert isinstance(completed, OperationCompleted)
    rival = completed.model_copy(update={"stop_reason": "cancelled"})
    state = ExplorerState()

    _fold(state, [*sim.log, rival])

    assert state.operations["op-1"].finished == completed


def test_a_child_read_after_its_pipelines_end_is_not_kept_as_its_child(small_space, make_request):
    """Nothing orders a child's request (its partition) after its parent's end (another): a
    replica that read the end first kept the children's ids under the ended parent for good,
    one list per pipeline ever run."""
    state = ExplorerState()
    explore(state, small_space, ENGINE, T0)
    explore(state, make_request(small_space, "pipe-1"), ENGINE, T0)
    end = OperationFailed(event_id="end-pipe-1", occurred_at=T0, operation_id="pipe-1", reason="x")
    explore(state, end, ENGINE, T0)
    for number in range(3):
        child = make_request(small_space, f"pipe-1-job{number}")
        explore(state, child.model_copy(update={"parent_operation_id": "pipe-1"}), ENGINE, T0)

    assert state.children == {}
