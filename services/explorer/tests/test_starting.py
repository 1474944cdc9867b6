"""Starting an operation: accepted with its seed, refused with a reason, or waiting for a space."""

from __future__ import annotations

from datetime import timedelta

import pytest

from discospace.core import ExperimentSpec, PropertySpec
from discospace.events import (
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationStarted,
    SamplesRequested,
)
from discospace.explorer.domain.decide import Engine, Timing
from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.domain.state import ExplorerState, explore, go_live, tick
from discospace.explorer.operators.random_walk import RandomWalk

LATENCY = {"property": "latency", "direction": "min"}


def test_a_request_on_a_registered_space_starts_and_keeps_the_seed_it_gave(
    loop, small_space, make_request
):
    sim = loop(small_space)
    decisions = sim.send(make_request(small_space, seed=7, batch_size=2))
    started = decisions[0]
    assert isinstance(started, OperationStarted)
    assert started.parameters.seed == 7
    assert started.space_id == small_space.space_id
    assert started.operator == "random_walk"


def test_a_request_without_a_seed_starts_with_one_derived_from_the_request(
    loop, small_space, make_request
):
    first = loop(small_space).send(make_request(small_space))[0]
    again = loop(small_space).send(make_request(small_space))[0]
    other = loop(small_space).send(make_request(small_space, op="op-2"))[0]
    assert isinstance(first, OperationStarted)
    assert isinstance(other, OperationStarted)
    assert first.parameters.seed is not None
    assert first == again
    assert other.parameters.seed != first.parameters.seed


def test_an_unknown_operator_fails_the_operation_naming_the_known_ones(
    loop, small_space, make_request
):
    decisions = loop(small_space).send(make_request(small_space, operator="simulated_annealing"))
    assert len(decisions) == 1
    failed = decisions[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason == "operator 'simulated_annealing' is not known: use random_walk"


def test_an_operation_waits_for_its_space_and_starts_when_it_arrives(small_space, make_request):
    engine = Engine(OperatorRegistry([RandomWalk()]), Timing(space_wait_s=30))
    state = ExplorerState()
    go_live(state, engine, small_space.occurred_at)
    waiting = explore(state, make_request(small_space), engine, small_space.occurred_at)
    assert waiting.events == []
    assert waiting.wake_at == small_space.occurred_at + timedelta(seconds=30)
    arrived = explore(state, small_space, engine, small_space.occurred_at + timedelta(seconds=5))
    assert [type(e) for e in arrived.events] == [OperationStarted, SamplesRequested]


def test_an_operation_whose_space_never_arrives_fails_after_the_wait(small_space, make_request):
    engine = Engine(OperatorRegistry([RandomWalk()]), Timing(space_wait_s=30))
    state = ExplorerState()
    go_live(state, engine, small_space.occurred_at)
    explore(state, make_request(small_space), engine, small_space.occurred_at)
    assert tick(state, engine, small_space.occurred_at + timedelta(seconds=29)).events == []
    late = tick(state, engine, small_space.occurred_at + timedelta(seconds=30)).events
    assert len(late) == 1
    assert isinstance(late[0], OperationFailed)
    assert late[0].reason == f"space '{small_space.space_id}' is not registered"


def test_all_entities_of_a_space_with_a_continuous_property_is_refused(
    loop, make_space, make_request
):
    space = make_space(
        (
            PropertySpec(name="batch_size", values=(1, 2)),
            PropertySpec(name="number_gpus", type="continuous", range=(1, 4)),
        )
    )
    failed = loop(space).send(make_request(space, number_entities="all"))[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason.startswith("number_entities 'all' needs a finite space")


def test_a_grouped_sampler_on_a_property_the_space_lacks_is_refused(
    loop, small_space, make_request
):
    request = make_request(small_space, sampler="grouped", group_by=("model",))
    failed = loop(small_space).send(request)[0]
    assert isinstance(failed, OperationFailed)
    assert "grouped sampler cannot run" in failed.reason
    assert "'model'" in failed.reason


def test_an_objective_no_experiment_measures_is_refused(loop, small_space, make_request):
    request = make_request(small_space, objective={"property": "latency", "direction": "min"})
    failed = loop(small_space).send(request)[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason == (
        f"the objective 'latency' is not measured by any experiment of space "
        f"'{small_space.space_id}'"
    )


@pytest.mark.parametrize(
    "objectives",
    [
        {"objectives": [{"property": "tps", "direction": "max"}, LATENCY]},
        {"objective": {"property": "tps", "direction": "max"}, "objectives": [LATENCY]},
        {"options": {"objectives": [{"property": "tps", "direction": "max"}, LATENCY]}},
    ],
    ids=["objectives", "objective-and-objectives", "older-options-objectives"],
)
def test_each_objective_of_objectives_must_be_measured_by_the_space(
    loop, small_space, make_request, objectives
):
    failed = loop(small_space).send(make_request(small_space, **objectives))[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason == (
        f"the objective 'latency' is not measured by any experiment of space "
        f"'{small_space.space_id}'"
    )


def test_objectives_the_space_measures_start_the_operation(loop, small_space, make_request):
    measured = [{"property": "tps", "direction": "max"}, {"property": "mem", "direction": "min"}]
    started = loop(small_space).send(make_request(small_space, objectives=measured))[0]
    assert isinstance(started, OperationStarted)
    assert [o.property for o in started.parameters.objectives_to_optimise()] == ["tps", "mem"]


def test_a_maximum_duration_that_is_not_wall_clock_time_is_refused(loop, small_space, make_request):
    request = make_request(small_space, stopping={"max_duration": "3ep"})
    failed = loop(small_space).send(request)[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason.startswith("max_duration must be a wall-clock time such as 2h")


def test_a_space_whose_experiments_depend_on_each_other_cannot_be_explored(
    loop, make_space, make_request
):
    ping = ExperimentSpec(
        actuator="Bench",
        experiment="ping",
        target_properties=("a",),
        required_properties=("batch_size", "pong.b"),
    )
    pong = ExperimentSpec(
        actuator="Bench",
        experiment="pong",
        target_properties=("b",),
        required_properties=("ping.a",),
    )
    space = make_space((PropertySpec(name="batch_size", values=(1, 2)),), (ping, pong))
    failed = loop(space).send(make_request(space))[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason == (
        f"space '{space.space_id}' cannot be explored: experiments 'ping', 'pong' depend on "
        "each other in a cycle"
    )


def test_the_wait_for_a_space_counts_from_when_the_explorer_noticed_the_request(
    small_space, make_request
):
    engine = Engine(OperatorRegistry([RandomWalk()]), Timing(space_wait_s=30))
    state = ExplorerState()
    noticed = small_space.occurred_at + timedelta(hours=3)
    go_live(state, engine, noticed)
    waiting = explore(state, make_request(small_space), engine, noticed)
    assert waiting.events == []
    assert waiting.wake_at == noticed + timedelta(seconds=30)


def test_options_random_walk_does_not_take_are_refused(loop, small_space, make_request):
    failed = loop(small_space).send(make_request(small_space, options={"eta_knob": 0.5}))[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason == "random_walk takes no options, but was given eta_knob"


def test_an_operation_cancelled_while_waiting_for_its_space_completes_as_cancelled(
    small_space, make_request
):
    engine = Engine(OperatorRegistry([RandomWalk()]), Timing(space_wait_s=30))
    state = ExplorerState()
    go_live(state, engine, small_space.occurred_at)
    explore(state, make_request(small_space), engine, small_space.occurred_at)
    cancel = OperationCancelRequested(
        event_id="cancel-1",
        occurred_at=small_space.occurred_at,
        operation_id="op-1",
        requested_by="alice",
    )
    [completed] = explore(state, cancel, engine, small_space.occurred_at).events
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "cancelled"
    assert completed.stop_detail == "cancelled by alice before it started"
    assert completed.counts.requested == 0
    assert explore(state, small_space, engine, small_space.occurred_at).events == []


@pytest.mark.parametrize("duration", ["-5sec", "0sec"])
def test_a_maximum_duration_that_is_not_positive_is_refused(
    loop, small_space, make_request, duration
) -> None:
    request = make_request(small_space, stopping={"max_duration": duration})
    failed = loop(small_space).send(request)[0]
    assert isinstance(failed, OperationFailed)
    assert failed.reason == f"max_duration must be above zero, not {duration}"


def test_the_explorer_runs_exactly_the_operators_core_knows() -> None:
    from discospace.core.operation_rules import OPERATORS
    from discospace.explorer.operators.known import known_operators

    assert known_operators().names == OPERATORS


def test_core_knows_which_optimizers_take_several_objectives() -> None:
    from discospace.core.operation_rules import OPTIMIZERS
    from discospace.explorer.operators.optuna_search.operator import optuna_operators
    from discospace.explorer.operators.optuna_search.samplers import MULTI_OBJECTIVE

    assert {o.name: 2 if MULTI_OBJECTIVE[o.kind] else 1 for o in optuna_operators()} == OPTIMIZERS
