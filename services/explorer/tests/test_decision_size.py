"""Every decision the explorer makes fits one message.

A decision too large for a message would be refused by the publisher every time it is tried,
and the explorer publishes its decisions in order under one lock: one such decision would stop
every operation. So text an operator or a hook wrote (an error, a stop detail) is cut short,
and a decision that still would not fit (an operator's run controls, its choice) fails its
operation instead, with the sizes in the reason.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import ClassVar

from discospace.core import DiscoverySpace, ExperimentRef, PropertySpec, SpaceSpec
from discospace.events import (
    MAX_MESSAGE_BYTES,
    Event,
    OperationCancelRequested,
    OperationCompleted,
    OperationCounts,
    OperationFailed,
    OperationParameters,
    SamplesDrawn,
    SamplesRequested,
    encode_within,
)
from discospace.events.envelope import MAX_OPERATION_REASON_CHARS
from discospace.explorer.domain.conducting import Conduct, ConductorView
from discospace.explorer.domain.decide import MAX_DRAW, Engine
from discospace.explorer.domain.operator import (
    Finish,
    Measure,
    OperationView,
    OperatorRegistry,
    Proposal,
    Wait,
)
from discospace.explorer.domain.spaces import KnownSpace
from discospace.explorer.operators.random_walk import RandomWalk

HUGE = 2 * MAX_MESSAGE_BYTES
POINT = {"batch_size": 1, "number_gpus": 1}


class _Operator:
    name: ClassVar[str] = "base"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None


class LoudBug(_Operator):
    """A bug whose error message is larger than a message."""

    name: ClassVar[str] = "loud"

    def propose(self, view: OperationView) -> Proposal:
        raise ValueError("x" * HUGE)


class LongFinish(_Operator):
    """Finishes after one measurement, with a stop detail larger than a message."""

    name: ClassVar[str] = "long-finish"

    def propose(self, view: OperationView) -> Proposal:
        if view.in_flight:
            return Wait()
        if view.outcomes:
            return Finish("operator_finished", "d" * HUGE)
        return Measure((POINT,))


class HeavyControls(_Operator):
    """Asks for a point with run controls larger than a message."""

    name: ClassVar[str] = "heavy"

    def propose(self, view: OperationView) -> Proposal:
        return Measure((POINT,), ({"notes": "c" * HUGE},))


def _run(loop, space, make_request, operator, **request):
    sim = loop(space, behaviour=lambda values, experiment, attempt: ("valid", {"tps": 1.0}))
    sim.engine = Engine(OperatorRegistry([RandomWalk(), operator]), sim.timing)
    sim.send(make_request(space, operator=operator.name, **request))
    sim.run()
    return sim


def _fits(events: list[Event]) -> None:
    for event in events:
        encode_within(event)  # raises EventTooLargeError


def test_an_operator_error_larger_than_a_message_fails_its_operation_with_a_reason_cut_short(
    loop, small_space, make_request
):
    sim = _run(loop, small_space, make_request, LoudBug())
    [failed] = sim.decisions(OperationFailed)
    assert failed.reason.startswith("operator 'loud' failed: ValueError: xxx")
    assert len(failed.reason) == MAX_OPERATION_REASON_CHARS
    assert failed.reason.endswith("…")
    _fits(sim.decisions())


def test_a_stop_detail_larger_than_a_message_is_cut_short_and_the_operation_completes(
    loop, small_space, make_request
):
    sim = _run(loop, small_space, make_request, LongFinish())
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "operator_finished"
    assert completed.stop_detail.startswith("ddd")
    assert "…" in completed.stop_detail
    assert completed.stop_detail.endswith("1 measured (0 invalid), 0 reused, 0 failed")
    _fits(sim.decisions())


def test_a_request_larger_than_a_message_fails_its_operation_and_says_how_large(
    loop, small_space, make_request
):
    sim = _run(loop, small_space, make_request, HeavyControls())
    assert sim.decisions(SamplesRequested) == []
    [failed] = sim.decisions(OperationFailed)
    assert failed.reason.startswith(
        "operator 'heavy' asked for a decision too large to publish: SamplesRequested "
    )
    assert f"over the {MAX_MESSAGE_BYTES}-byte message limit" in failed.reason
    assert failed.counts is not None
    assert failed.counts.requested == 0
    _fits(sim.decisions())


class SomeControls(_Operator):
    """Asks for one point with 100 kB of run controls: within the default limit."""

    name: ClassVar[str] = "some-controls"

    def propose(self, view: OperationView) -> Proposal:
        if view.in_flight:
            return Wait()
        if view.outcomes:
            return Finish("operator_finished", "done")
        return Measure((POINT,), ({"notes": "c" * 100_000},))


def test_the_limit_is_the_explorers_own_setting(loop, small_space, make_request):
    sim = _run(loop, small_space, make_request, SomeControls())
    assert len(sim.decisions(SamplesRequested)) == 1
    assert len(sim.decisions(OperationCompleted)) == 1

    limit = 64 * 1024  # the smallest `max_message_bytes` a service takes
    sim = loop(small_space, behaviour=lambda values, experiment, attempt: ("valid", {"tps": 1.0}))
    operators = OperatorRegistry([RandomWalk(), SomeControls()])
    sim.engine = Engine(operators, sim.timing, max_message_bytes=limit)
    sim.send(make_request(small_space, operator="some-controls"))
    sim.run()
    [failed] = sim.decisions(OperationFailed)
    assert f"over the {limit}-byte message limit" in failed.reason
    for event in sim.decisions():
        encode_within(event, limit)


class LoudConductor:
    """A conductor with a bug whose error message is larger than a message."""

    name: ClassVar[str] = "loud-conductor"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def conduct(self, view: ConductorView) -> Conduct:
        raise ValueError("x" * HUGE)


class WordyConductor(LoudConductor):
    """A conductor that ends with a stop detail larger than a message."""

    name: ClassVar[str] = "wordy-conductor"

    def conduct(self, view: ConductorView) -> Conduct:
        none = OperationCounts(requested=0, measured=0, reused=0, failed=0, invalid=0)
        end = OperationCompleted.caused_by(
            view.started,
            view.now,
            operation_id=view.operation_id,
            space_id=view.started.space_id,
            stop_reason="operator_finished",
            stop_detail="d" * HUGE,
            counts=none,
        )
        return Conduct([end])


def test_a_conductors_error_or_decision_too_large_for_a_message_fails_its_operation(
    loop, small_space, make_request
):
    sim = _run(loop, small_space, make_request, LoudConductor())
    [failed] = sim.decisions(OperationFailed)
    assert failed.reason.startswith("operator 'loud-conductor' failed: ValueError: xxx")
    assert len(failed.reason) == MAX_OPERATION_REASON_CHARS

    sim = _run(loop, small_space, make_request, WordyConductor())
    assert sim.decisions(OperationCompleted) == []
    [failed] = sim.decisions(OperationFailed)
    assert failed.reason.startswith(
        "operator 'wordy-conductor' asked for a decision too large to publish: OperationCompleted "
    )
    _fits(sim.decisions())


def test_a_window_wider_than_one_draw_is_asked_for_in_several_requests(
    loop, make_space, make_request
):
    """The sampler's answer lists every entity it drew: 50,000 of them would not fit a message,
    and the operation would wait for that answer forever."""
    space = make_space(
        (
            PropertySpec(name="batch_size", values=tuple(range(1, 2_251))),
            PropertySpec(name="number_gpus", values=(1, 2)),
        )
    )
    sim = loop(space)
    decisions = sim.send(make_request(space, batch_size=4_500, number_entities=4_500, seed=3))
    draws = [e for e in decisions if isinstance(e, SamplesRequested)]
    assert [(d.count, d.position) for d in draws] == [(2_000, 0), (2_000, 2_000), (500, 4_000)]
    sim.answer_draws()
    drawn = [e.entity_ids for e in sim.log if isinstance(e, SamplesDrawn)]
    assert [len(ids) for ids in drawn] == [2_000, 2_000, 500]
    assert len({entity for ids in drawn for entity in ids}) == 4_500
    assert sim.entities_in_flight() == 4_500


def test_the_answer_to_the_largest_draw_fits_the_smallest_message_limit():
    spec = SpaceSpec(
        sample_store="store-a",
        entity_space=(PropertySpec(name="batch_size", values=tuple(range(MAX_DRAW))),),
        measurement_space=(ExperimentRef(actuator="Bench", experiment="bench"),),
    )
    space = DiscoverySpace.from_spec(spec)
    ids = tuple(entity.id for entity in space.entity_space.sequential())
    drawn = SamplesDrawn(
        event_id=str(uuid.UUID(int=1)),
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        operation_id="o" * 200,
        request_index=10**9,
        entity_ids=ids,
        next_position=10**12,
        exhausted=False,
    )
    encode_within(drawn, 64 * 1024)


def test_a_cancel_before_the_start_with_a_reason_larger_than_a_message_ends_the_operation(
    loop, small_space, make_request
):
    """Uncut, the cancellation's end could not be published: the engine raised, for this
    operation and every other, on every decision round and every restart."""
    sim = loop(small_space)
    waiting = make_request(space_registered_elsewhere(small_space), op="op-1")
    sim.send(waiting)  # its space is not registered: it waits for it
    cancel = OperationCancelRequested(
        event_id="cancel-op-1",
        occurred_at=sim.now,
        operation_id="op-1",
        requested_by="alice",
        reason="r" * HUGE,
    )
    sim.send(cancel)
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "cancelled"
    assert completed.stop_detail.startswith("cancelled by alice before it started: rrr")
    _fits(sim.decisions())
    sim.send(make_request(small_space, op="op-2", number_entities=2))
    sim.run()
    assert len(sim.decisions(OperationCompleted)) == 2


def space_registered_elsewhere(space):
    """A request for a space id no one registered (the request names it only)."""
    return space.model_copy(update={"space_id": "space-000000000000"})
