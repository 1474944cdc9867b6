"""Stopping rules for every operator: a budget of measurement time, plateaus, exhaustion."""

from __future__ import annotations

import pytest

from discospace.events import OperationCompleted, OperationFailed, StoppingRules
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.stopping import (
    _measurement_time_spent,
    check_rules,
    measurement_seconds,
)
from discospace.explorer.operators.known import known_operators

MAX_TPS = {"property": "tps", "direction": "max"}


def outcome(seconds: float, reused: bool = False) -> PairResult:
    return PairResult("e", {}, "bench", True, {"tps": 1.0}, None, reused, seconds)


def test_measurement_time_is_the_sum_of_the_durations_and_reuse_is_free():
    assert measurement_seconds([outcome(1.5), outcome(0.0, reused=True), outcome(2.0)]) == 3.5


def test_the_measurement_time_stop_says_its_figures_in_full():
    """`:g` kept six digits: 1234571.5 s spent and a budget of 1234567 s both read
    1.23457e+06."""
    rules = StoppingRules(max_measurement_time="1234567sec")

    stop = _measurement_time_spent(rules, [outcome(1_234_571.5)])

    assert stop is not None
    assert stop.detail == (
        "measurements took 1234571.5 s in total, reaching the budget of 1234567 s"
    )


def test_a_measurement_time_budget_stops_the_operation_once_it_is_spent(
    loop, eighty_space, make_request
):
    sim = loop(eighty_space)
    rules = {"max_measurement_time": "5sec"}
    sim.send(make_request(eighty_space, batch_size=2, stopping=rules))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "max_measurement_time"
    assert completed.counts.measured == 5
    assert "5 s" in completed.stop_detail


def test_a_measurement_time_budget_in_dur_is_spent_exactly(loop, eighty_space, make_request):
    """0.07dur of 100sec is 7 s: as a float product, 7.000000000000001 s, it let seven
    second-long measurements pass the budget, and stopped after the eighth."""
    from discospace.explorer.domain.stopping import measurement_time_budget

    rules = {"max_measurement_time": "0.07dur", "max_duration": "100sec"}
    assert measurement_time_budget(StoppingRules.model_validate(rules)) == 7.0
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=1, stopping=rules))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "max_measurement_time"
    assert completed.counts.measured == 7


@pytest.mark.parametrize(
    ("budget", "maximum", "seconds", "measured"),
    [("0.05dur", "10sec", 0.5, 1), ("0.25dur", "10sec", 2.5, 3), ("0.5dur", "3sec", 1.5, 2)],
)
def test_a_measurement_time_budget_in_dur_is_not_rounded_to_whole_seconds(
    loop, eighty_space, make_request, budget, maximum, seconds, measured
):
    """0.05dur of 10sec was 0 s (a conversion to `sec` rounds down to whole seconds): the
    operation ended at once, measuring nothing; 0.25dur of 10sec stopped after 2 of 2.5 s."""
    from discospace.explorer.domain.stopping import measurement_time_budget

    rules = {"max_measurement_time": budget, "max_duration": maximum}
    assert measurement_time_budget(StoppingRules.model_validate(rules)) == seconds
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=1, stopping=rules))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "max_measurement_time"
    assert completed.counts.measured == measured


def test_reused_measurements_do_not_spend_the_measurement_time_budget(
    loop, small_space, make_request
):
    def reused(values, experiment, attempt):
        return ("reused", {"tps": 1.0, "mem": 1})

    sim = loop(small_space, behaviour=reused)
    sim.send(make_request(small_space, stopping={"max_measurement_time": "1sec"}))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "space_exhausted"
    assert completed.counts.reused == 8


def test_a_measurement_time_budget_in_training_units_is_refused_with_one_sentence(
    loop, small_space, make_request
):
    sim = loop(small_space)
    [failed] = sim.send(make_request(small_space, stopping={"max_measurement_time": "10ep"}))

    assert isinstance(failed, OperationFailed)
    assert "max_measurement_time must be a positive time in seconds" in failed.reason
    assert check_rules(StoppingRules(max_measurement_time="2h")) is None


def test_every_rule_applies_to_an_optimizer_too(loop, eighty_space, make_request):
    def flat(values, experiment, attempt):
        return ("valid", {"tps": 1.0, "mem": 1})

    sim = loop(eighty_space, behaviour=flat)
    sim.engine = Engine(known_operators(), sim.timing)
    rules = {"no_improvement": 6}
    sim.send(make_request(eighty_space, operator="optuna_tpe", objective=MAX_TPS, stopping=rules))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "no_improvement"
    assert completed.counts.measured == 7


def test_an_optimizer_reaching_its_target_stops_with_target_reached(
    loop, eighty_space, make_request
):
    sim = loop(eighty_space)
    sim.engine = Engine(known_operators(), sim.timing)
    rules = {"target_value": 1024.0}
    request = make_request(
        eighty_space, operator="optuna_tpe", seed=1, objective=MAX_TPS, stopping=rules
    )
    sim.send(request)
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "target_reached"
    assert completed.best_values["tps"] >= 1024.0
