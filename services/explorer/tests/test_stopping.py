"""Cancellation, stopping rules and the best entity for the objective."""

from __future__ import annotations

from datetime import timedelta

import pytest

from discospace.events import OperationCompleted, SamplesRequested
from discospace.explorer.domain.decide import Timing

from .conftest import BENCH, ENERGY, SMALL, request, space_registered, throughput

MAX_TPS = {"property": "tps", "direction": "max"}


def _cancelled_with_three_in_flight(loop, space, make_request, **fields):
    """A walk of 3 at a time, about to be cancelled: one measured, three in flight."""
    sim = loop(space, **fields)
    sim.send(make_request(space, batch_size=3, seed=1))
    sim.answer_draws()
    sim.measure_next()
    sim.answer_draws()
    assert len(sim.measuring) == 3
    return sim


def test_a_cancelled_operation_requests_nothing_more_and_waits_for_what_is_in_flight(
    loop, eighty_space, make_request
):
    sim = _cancelled_with_three_in_flight(loop, eighty_space, make_request)
    requested = len(sim.decisions(SamplesRequested))
    assert sim.cancel() == []
    assert sim.measure_next() == []
    assert sim.measure_next() == []
    [completed] = sim.measure_next()
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "cancelled"
    assert completed.stop_detail.startswith("cancelled by alice: enough; ")
    assert len(sim.decisions(SamplesRequested)) == requested
    assert sim.answer_draws() == []


def test_a_cancelled_operation_counts_what_landed_after_the_cancel(
    loop, eighty_space, make_request
):
    sim = _cancelled_with_three_in_flight(loop, eighty_space, make_request)
    sim.cancel()
    sim.measure_next()
    sim.send(sim.result_of(sim.measuring.pop(0), "fail", False))
    [completed] = sim.send(sim.result_of(sim.measuring.pop(0), "reused", {"tps": 1.0, "mem": 1}))
    counts = completed.counts
    assert (counts.requested, counts.measured, counts.reused, counts.failed) == (4, 2, 1, 1)
    assert completed.stop_detail.endswith("2 measured (0 invalid), 1 reused, 1 failed")


def test_a_request_skipped_by_its_actuator_after_the_cancel_is_counted_failed(
    loop, eighty_space, make_request
):
    sim = _cancelled_with_three_in_flight(loop, eighty_space, make_request)
    sim.cancel()
    while len(sim.measuring) > 1:
        sim.measure_next()
    [completed] = sim.send(sim.result_of(sim.measuring.pop(0), "fail", False))
    assert completed.counts.failed == 1
    assert completed.counts.measured == 3


def test_a_cancelled_operation_retries_nothing_and_does_not_wait_for_a_retry(
    loop, eighty_space, make_request
):
    sim = _cancelled_with_three_in_flight(loop, eighty_space, make_request)
    sim.send(sim.result_of(sim.measuring.pop(0), "fail", True))
    sim.cancel()
    sim.measure_next()
    [completed] = sim.measure_next()
    counts = completed.counts
    assert (counts.requested, counts.measured, counts.failed) == (4, 3, 0)
    assert completed.stop_detail.endswith("0 failed, 1 cancelled (in flight)")
    assert all(r.attempt == 1 for r in sim.decisions(SamplesRequested))


def test_a_cancelled_operation_waits_for_a_draw_the_sampler_has_not_answered(
    loop, eighty_space, make_request
):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=2, seed=1))
    assert sim.cancel() == []
    assert sim.measuring == []
    assert sim.answer_draws() == []
    sim.measure_next()
    [completed] = sim.measure_next()
    assert completed.counts.measured == 2


def test_draws_never_answered_by_the_cancel_wait_are_said_apart_from_those_in_flight(
    loop, eighty_space, make_request
):
    """'stopped waiting for 2 in flight' with 0 requested and no count of them: the sampler
    never named the two entities the walk asked for."""
    timing = Timing(1.0, 8.0, 30.0, cancel_wait_s=60.0)
    sim = loop(eighty_space, timing=timing)
    sim.send(make_request(eighty_space, batch_size=2, seed=1))
    sim.cancel()

    [completed] = sim.tick_at(sim.now + timedelta(seconds=60))

    assert "(stopped waiting for 2 entities never drawn after 60 s)" in completed.stop_detail
    assert completed.counts.requested == 0


def test_a_cancelled_operation_stops_waiting_after_the_cancel_wait(
    loop, eighty_space, make_request, at
):
    timing = Timing(1.0, 8.0, 30.0, cancel_wait_s=60.0)
    sim = _cancelled_with_three_in_flight(loop, eighty_space, make_request, timing=timing)
    sim.cancel()
    sim.measure_next()
    assert sim.wake_at == sim.now + timedelta(seconds=60)
    assert sim.tick_at(sim.now + timedelta(seconds=59)) == []
    [completed] = sim.tick_at(sim.now + timedelta(seconds=1))
    assert completed.stop_reason == "cancelled"
    assert "(stopped waiting for 2 in flight after 60 s)" in completed.stop_detail
    assert completed.stop_detail.endswith("0 failed, 2 cancelled (in flight)")


def test_the_cancel_wait_is_said_in_full_seconds(loop, eighty_space, make_request):
    """`:g` kept six digits: a wait of 1234567 s read 1.23457e+06 s."""
    timing = Timing(1.0, 8.0, 30.0, cancel_wait_s=1234567.0)
    sim = _cancelled_with_three_in_flight(loop, eighty_space, make_request, timing=timing)
    sim.cancel()

    [completed] = sim.tick_at(sim.now + timedelta(seconds=1234567))

    assert "(stopped waiting for 3 in flight after 1234567 s)" in completed.stop_detail


def test_a_cancel_while_nothing_is_in_flight_completes_at_once(loop, eighty_space, make_request):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=1, seed=1))
    sim.answer_draws()
    sim.send(sim.result_of(sim.measuring.pop(0), "fail", True))
    [completed] = sim.cancel()
    assert completed.stop_reason == "cancelled"
    assert completed.stop_detail.endswith("0 failed, 1 cancelled (in flight)")


def test_the_best_entity_has_the_largest_value_of_a_maximised_objective(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=2, seed=3, objective=MAX_TPS))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.best_entity_values == {"batch_size": 8, "number_gpus": 2}
    assert completed.best_values == {"tps": 16.0, "mem": 1}
    assert completed.best_entity_id is not None


def test_the_best_entity_has_the_smallest_value_of_a_minimised_objective(
    loop, small_space, make_request
):
    sim = loop(small_space)
    objective = {"property": "bench.tps", "direction": "min"}
    sim.send(make_request(small_space, batch_size=2, seed=3, objective=objective))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.best_entity_values == {"batch_size": 1, "number_gpus": 1}


def test_without_an_objective_no_best_entity_is_named(loop, small_space, make_request):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=2))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.best_entity_id is None
    assert completed.best_values is None


def test_the_measurement_budget_stops_the_operation(loop, eighty_space, make_request):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=3, stopping={"max_measurements": 5}))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "max_measurements"
    assert completed.counts.measured == 5


def test_the_window_holds_no_more_than_the_measurement_budget_can_still_count(
    loop, eighty_space, make_request
):
    """Near the end of the budget the window filled to batch_size anyway: measurements that
    could never count, reported cancelled, whose actuators went on running them."""
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=4, stopping={"max_measurements": 6}))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert (completed.counts.requested, completed.counts.measured) == (6, 6)
    assert "cancelled" not in completed.stop_detail


def test_reaching_the_target_value_stops_the_operation(loop, eighty_space, make_request):
    sim = loop(eighty_space)
    rules = {"target_value": 1000.0}
    sim.send(make_request(eighty_space, batch_size=1, objective=MAX_TPS, stopping=rules))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "target_reached"
    assert completed.best_values["tps"] >= 1000.0
    assert completed.counts.measured < 80


def test_measurements_in_a_row_without_improvement_stop_the_operation(
    loop, eighty_space, make_request
):
    def flat(values, experiment, attempt):
        return ("valid", {"tps": 1.0, "mem": 1})

    sim = loop(eighty_space, behaviour=flat)
    rules = {"no_improvement": 4}
    sim.send(make_request(eighty_space, batch_size=1, objective=MAX_TPS, stopping=rules))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "no_improvement"
    assert completed.counts.measured == 5


@pytest.mark.parametrize("objective", ["tps", "joules"])
def test_configurations_whose_dependent_objective_cannot_run_count_without_improvement(
    loop, objective
):
    """`joules` is measured by `energy`, which reads `bench.tps`: where `bench` runs out of
    memory, `energy` never runs. Those configurations did not count toward `no_improvement`
    (the walk ran the whole space, 7 of its 8 configurations infeasible); they count as the
    same configurations do when the objective is `bench`'s own `tps`."""
    space = space_registered(SMALL, (BENCH, ENERGY))
    first: list[dict] = []

    def only_the_first_fits(values, experiment, attempt):
        first[:] = first or [values]
        if experiment == "bench" and values != first[0]:
            return ("invalid", "CUDA out of memory")
        return throughput(values, experiment, attempt)

    sim = loop(space, behaviour=only_the_first_fits)
    direction = "max" if objective == "tps" else "min"
    rules = {"no_improvement": 2}
    sim.send(
        request(
            space,
            batch_size=1,
            seed=1,
            objective={"property": objective, "direction": direction},
            stopping=rules,
        )
    )
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "no_improvement"
    assert (completed.counts.measured, completed.counts.invalid) == (4, 2)


def test_the_maximum_duration_stops_the_operation_when_its_timer_fires(
    loop, eighty_space, make_request, at
):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=2, stopping={"max_duration": "1m"}))
    assert sim.wake_at == at(60)
    assert sim.tick_at(at(59)) == []
    [completed] = sim.tick_at(at(60))
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "max_duration"


def test_a_finished_operation_ignores_what_still_arrives(loop, small_space, make_request):
    sim = loop(small_space)
    tps = {"property": "tps", "direction": "max"}
    stopping = {"target_value": -1e9}  # reached by the first result, the second still in flight
    sim.send(make_request(small_space, batch_size=2, objective=tps, stopping=stopping))
    sim.answer_draws()
    [completed] = sim.measure_next()
    assert isinstance(completed, OperationCompleted)
    assert sim.measure_next() == []
    assert sim.tick_at(sim.now + timedelta(hours=1)) == []
    assert len(sim.decisions(SamplesRequested)) == 1


def test_a_cancelled_operation_names_the_best_entity_found_so_far_even_after_a_restart(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=2, seed=3, objective=MAX_TPS))
    for _ in range(3):
        sim.step()
    sim.crash()
    sim.log.append(sim.cancel_event())
    assert sim.restart() == []
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "cancelled"
    assert completed.best_entity_id is not None
