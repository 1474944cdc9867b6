"""`points`: exactly the listed entities are measured, each once, within the window; then it
finishes."""

from __future__ import annotations

from discospace.core import Entity
from discospace.events import OperationCompleted, OperationFailed, SamplesRequested
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.operators.points import Points
from discospace.explorer.operators.random_walk import RandomWalk

POINTS = [{"batch_size": 8, "number_gpus": 2}, {"batch_size": 1, "number_gpus": 1}]


def _loop(loop, space):
    running = loop(space)
    running.engine = Engine(OperatorRegistry([RandomWalk(), Points()]), running.timing)
    return running


def test_points_measures_exactly_the_listed_entities_then_finishes(loop, small_space, make_request):
    running = _loop(loop, small_space)
    points = [*POINTS, {"batch_size": 8.0, "number_gpus": 2}]
    running.send(
        make_request(small_space, operator="points", batch_size=1, options={"points": points})
    )
    running.run()
    requested = list(running.decisions(SamplesRequested))
    assert [r.points for r in requested] == [(POINTS[0],), (POINTS[1],)]
    assert all(r.count is None for r in requested)
    [done] = running.decisions(OperationCompleted)
    assert done.stop_reason == "requested_entities_measured"
    assert done.counts.measured == 2
    assert running.most_in_flight == 1


def test_points_fill_the_window_at_once(loop, small_space, make_request):
    running = _loop(loop, small_space)
    running.send(
        make_request(small_space, operator="points", batch_size=5, options={"points": POINTS})
    )
    first = [e for e in running.log if isinstance(e, SamplesRequested)]
    assert len(first) == 2
    running.run()
    measured = {Entity.of(p).id for p in POINTS}
    assert {Entity.of(point).id for e in first for point in e.points or ()} == measured


def test_points_outside_the_space_or_malformed_options_are_refused_in_one_sentence(
    loop, small_space, make_request
):
    running = _loop(loop, small_space)
    outside = {"points": [{"batch_size": 3, "number_gpus": 1}]}
    running.send(make_request(small_space, op="op-a", operator="points", options=outside))
    running.send(make_request(small_space, op="op-b", operator="points", options={"points": []}))
    running.send(make_request(small_space, op="op-c", operator="points", options={"n": 1}))
    reasons = {e.operation_id: e.reason for e in running.decisions(OperationFailed)}
    assert reasons["op-a"].startswith(f"point 1 of points is not in space '{small_space.space_id}'")
    assert "batch_size" in reasons["op-a"]
    assert reasons["op-b"].startswith("points needs options {points: [entities]}: points:")
    assert reasons["op-c"].startswith("points needs options {points: [entities]}:")


def test_a_point_the_sampler_refuses_is_counted_as_refused_not_as_failed(
    loop, small_space, make_request
):
    """It was counted failed and not requested: requested < measured + reused + failed, and
    the cancelled figure (the difference) hid a pair in flight."""
    from discospace.events import SamplesDrawn

    running = _loop(loop, small_space)
    running.send(
        make_request(
            small_space, operator="points", batch_size=2, seed=1, options={"points": POINTS}
        )
    )
    first, second = running.draws
    running.draws.clear()
    running.answer(first)
    running.send(
        SamplesDrawn.caused_by(
            second,
            running.now,
            operation_id=second.operation_id,
            request_index=second.request_index,
            entity_ids=(),
            next_position=0,
            exhausted=False,
            rejected_points=("batch_size=1: no pool offers bench",),
        )
    )
    running.measure_next()

    [done] = running.decisions(OperationCompleted)
    counts = done.counts
    assert (counts.requested, counts.measured, counts.reused, counts.failed) == (1, 1, 0, 0)
    assert done.stop_detail.endswith("0 failed, 1 refused by the sampler")
