"""Cancellation, stopping rules and the best entity for the objective."""

from __future__ import annotations

from datetime import timedelta

from discospace.events import OperationCompleted, SamplesRequested

MAX_TPS = {"property": "tps", "direction": "max"}


def test_a_cancelled_operation_requests_nothing_more_and_completes_as_cancelled(
    loop, eighty_space, make_request
):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=4, seed=1))
    sim.answer_draws()
    sim.measure_next()
    sim.answer_draws()
    [completed] = sim.cancel()
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "cancelled"
    assert completed.stop_detail.startswith("cancelled by alice: enough")
    assert completed.counts.measured == 1
    while sim.measuring:
        assert sim.measure_next() == []
    assert sim.answer_draws() == []


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
    sim.send(make_request(small_space, batch_size=2))
    sim.answer_draws()
    sim.cancel()
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
    [completed] = sim.restart()
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "cancelled"
    assert completed.best_entity_id is not None


def test_what_is_in_flight_at_the_stop_is_said_cancelled_in_the_stop_detail(
    loop, eighty_space, make_request
):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=4, seed=1))
    sim.answer_draws()
    sim.measure_next()
    sim.answer_draws()
    [completed] = sim.cancel()
    counts = completed.counts
    in_flight = counts.requested - counts.measured - counts.reused - counts.failed

    assert in_flight > 0
    assert completed.stop_detail.endswith(f"0 failed, {in_flight} cancelled (in flight)")
