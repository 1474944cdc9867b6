"""The operator interface: operators propose, the engine requests, retries and completes."""

from __future__ import annotations

from typing import ClassVar

from discospace.core import PropertySpec
from discospace.events import (
    OperationCompleted,
    OperationFailed,
    OperationParameters,
    SamplesRequested,
)
from discospace.explorer.domain.decide import Engine
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


class Doubling:
    """A toy optimizer: batch sizes 1, 2, 4, ... one at a time, until one is invalid."""

    name: ClassVar[str] = "doubling"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def propose(self, view: OperationView) -> Proposal:
        if view.in_flight:
            return Wait()
        if any(not o.is_valid for o in view.outcomes):
            return Finish("operator_finished", "found the largest batch size that fits")
        size = 2 ** len(view.outcomes)
        return Measure(({"batch_size": str(size), "number_gpus": 1},))


class Idle:
    """An operator that never proposes anything."""

    name: ClassVar[str] = "idle"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def propose(self, view: OperationView) -> Proposal:
        return Wait()


class Repeating:
    """An operator that proposes the same point many times, beyond its window."""

    name: ClassVar[str] = "repeating"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def propose(self, view: OperationView) -> Proposal:
        if view.outcomes:
            return Finish("operator_finished", "done")
        point = {"batch_size": 2, "number_gpus": 1}
        return Measure(
            (point, point, {"batch_size": 4, "number_gpus": 2}, {"batch_size": 8, "number_gpus": 2})
        )


def _with(sim, *operators):
    sim.engine = Engine(OperatorRegistry([RandomWalk(), *operators]), sim.timing)
    return sim


def _fits_up_to_4(values, experiment, attempt):
    if values["batch_size"] > 4:
        return ("invalid", "CUDA out of memory")
    return ("valid", {"tps": float(values["batch_size"]), "mem": 1})


def test_an_operator_proposing_points_gets_them_measured_one_request_each(
    loop, small_space, make_request
):
    sim = _with(loop(small_space, behaviour=_fits_up_to_4), Doubling())
    sim.send(make_request(small_space, operator="doubling", batch_size=1))
    sim.run()
    points = [r.points for r in sim.decisions(SamplesRequested)]
    assert points == [
        ({"batch_size": 1, "number_gpus": 1},),
        ({"batch_size": 2, "number_gpus": 1},),
        ({"batch_size": 4, "number_gpus": 1},),
        ({"batch_size": 8, "number_gpus": 1},),
    ]
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "operator_finished"
    assert completed.counts.invalid == 1


def test_an_operator_proposing_a_point_outside_the_space_fails_the_operation(
    loop, make_space, make_request
):
    space = make_space(
        (
            PropertySpec(name="batch_size", values=(1, 2)),
            PropertySpec(name="number_gpus", values=(1,)),
        )
    )
    sim = _with(loop(space, behaviour=_fits_up_to_4), Doubling())
    sim.send(make_request(space, operator="doubling"))
    sim.run()
    [failed] = sim.decisions(OperationFailed)
    assert failed.reason.startswith(
        "operator 'doubling' failed: property 'batch_size' has the value 4"
    )
    assert failed.counts is not None
    assert failed.counts.measured == 2


class Buggy:
    """An operator with a bug: its second proposal divides by zero."""

    name: ClassVar[str] = "buggy"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def propose(self, view: OperationView) -> Proposal:
        if view.in_flight:
            return Wait()
        if view.outcomes:
            return Measure(({"batch_size": 1 // 0, "number_gpus": 1},))
        return Measure(({"batch_size": 1, "number_gpus": 1},))


def test_an_operators_bug_fails_its_operation_and_every_other_goes_on(
    loop, small_space, make_request
):
    sim = _with(loop(small_space, behaviour=_fits_up_to_4), Buggy())
    sim.send(make_request(small_space, op="op-bug", operator="buggy"))
    sim.send(make_request(small_space, op="op-walk", number_entities=3, seed=1))
    sim.run()

    [failed] = sim.decisions(OperationFailed)
    assert failed.operation_id == "op-bug"
    assert (
        failed.reason
        == "operator 'buggy' failed: ZeroDivisionError: integer division or modulo by zero"
    )
    [completed] = sim.decisions(OperationCompleted)
    assert (completed.operation_id, completed.counts.measured) == ("op-walk", 3)


def test_an_operator_that_waits_while_nothing_is_in_flight_fails_the_operation(
    loop, small_space, make_request
):
    sim = _with(loop(small_space), Idle())
    decisions = sim.send(make_request(small_space, operator="idle"))
    failed = decisions[-1]
    assert isinstance(failed, OperationFailed)
    assert failed.reason == "operator 'idle' waits while nothing is in flight"


def test_points_already_in_the_operation_and_points_beyond_the_window_are_dropped(
    loop, small_space, make_request
):
    sim = _with(loop(small_space), Repeating())
    decisions = sim.send(make_request(small_space, operator="repeating", batch_size=2))
    requested = [r.points for r in decisions if isinstance(r, SamplesRequested)]
    assert requested == [
        ({"batch_size": 2, "number_gpus": 1},),
        ({"batch_size": 4, "number_gpus": 2},),
    ]


class Stuck:
    """An operator that keeps proposing a point the operation already measured."""

    name: ClassVar[str] = "stuck"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def propose(self, view: OperationView) -> Proposal:
        return Measure(({"batch_size": 2, "number_gpus": 1},))


def test_an_operator_proposing_nothing_new_while_nothing_is_in_flight_fails_the_operation(
    loop, small_space, make_request
):
    sim = _with(loop(small_space), Stuck())
    sim.send(make_request(small_space, operator="stuck"))
    sim.run()
    [failed] = sim.decisions(OperationFailed)
    assert failed.reason == "operator 'stuck' proposed nothing new while nothing is in flight"
    assert len(sim.decisions(SamplesRequested)) == 1


class WithControls:
    """An operator that passes run controls (inputs) with each point it proposes."""

    name: ClassVar[str] = "with_controls"

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def propose(self, view: OperationView) -> Proposal:
        if view.outcomes:
            return Finish("operator_finished", "done")
        if view.in_flight:
            return Wait()
        return Measure(({"batch_size": 2, "number_gpus": 1},), ({"cost_limit": 12.5},))


def _fails_first_attempt(values, experiment, attempt):
    return ("fail", True) if attempt == 1 else ("valid", {"tps": 1.0, "mem": 1})


def test_an_operators_run_controls_go_with_the_point_and_with_its_retries(
    loop, small_space, make_request
):
    sim = _with(loop(small_space, behaviour=_fails_first_attempt), WithControls())
    sim.send(make_request(small_space, operator="with_controls", max_retries=1))
    sim.run()

    requests = sim.decisions(SamplesRequested)
    assert [(r.attempt, r.inputs) for r in requests] == [
        (1, ({"cost_limit": 12.5},)),
        (2, ({"cost_limit": 12.5},)),
    ]
    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.measured == 1
