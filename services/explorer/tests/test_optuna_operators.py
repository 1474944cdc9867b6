"""The Optuna operators inside the explorer's engine, with the fake sampler and actuators."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from discospace.core import Entity, PropertySpec
from discospace.events import OperationCompleted, OperationFailed, SamplesRequested
from discospace.explorer.domain.decide import Engine
from discospace.explorer.operators.known import known_operators
from discospace.explorer.operators.optuna_search import operator as operator_module
from discospace.explorer.operators.optuna_search import samplers
from discospace.explorer.operators.optuna_search.samplers import missing_packages

from .conftest import BENCH, ENERGY, SMALL, request, space_registered, throughput

MAX_TPS = {"property": "tps", "direction": "max"}
NUMERIC = (
    PropertySpec(name="batch_size", values=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)),
    PropertySpec(name="number_gpus", values=(1, 2, 4, 8)),
)
CONTINUOUS = (
    PropertySpec(name="batch_size", range=(1.0, 64.0)),
    PropertySpec(name="number_gpus", values=(1, 2)),
)


@pytest.fixture
def optimizer_loop(loop):
    """The simulated loop, with every operator the explorer knows."""

    def make(space, **kwargs):
        sim = loop(space, **kwargs)
        sim.engine = Engine(known_operators(), sim.timing)
        return sim

    return make


def points(sim) -> list[dict[str, Any]]:
    return [dict(p) for r in sim.decisions(SamplesRequested) for p in r.points or ()]


def run(optimizer_loop, space, make_request, **parameters) -> Any:
    sim = optimizer_loop(space)
    sim.send(make_request(space, **parameters))
    sim.run()
    return sim


def test_tpe_measures_every_point_of_a_finite_space_once_then_says_it_is_exhausted(
    optimizer_loop, eighty_space, make_request
):
    sim = run(
        optimizer_loop,
        eighty_space,
        make_request,
        operator="optuna_tpe",
        batch_size=3,
        seed=5,
        objective=MAX_TPS,
    )

    [completed] = sim.decisions(OperationCompleted)
    asked = [Entity.of(p).id for p in points(sim)]
    assert completed.stop_reason == "space_exhausted"
    assert completed.counts.measured == 80
    assert len(asked) == len(set(asked)) == 80
    assert completed.best_values["tps"] == 4096.0


def test_the_same_seed_gives_the_same_points_and_another_seed_other_points(
    optimizer_loop, eighty_space, make_request
):
    def first_twenty(seed: int) -> list[dict[str, Any]]:
        rules = {"max_measurements": 20}
        sim = run(
            optimizer_loop,
            eighty_space,
            make_request,
            operator="optuna_tpe",
            seed=seed,
            objective=MAX_TPS,
            stopping=rules,
        )
        return points(sim)

    assert first_twenty(1) == first_twenty(1)
    assert first_twenty(1) != first_twenty(2)


def test_tpe_finds_the_best_point_in_fewer_measurements_than_random_order_on_average(
    optimizer_loop, eighty_space, make_request
):
    def measurements_to_best(operator: str, seed: int) -> int:
        rules = {"target_value": 4096.0}
        sim = run(
            optimizer_loop,
            eighty_space,
            make_request,
            operator=operator,
            seed=seed,
            objective=MAX_TPS,
            stopping=rules,
        )
        [completed] = sim.decisions(OperationCompleted)
        return completed.counts.measured

    seeds = range(6)
    tpe = sum(measurements_to_best("optuna_tpe", s) for s in seeds)
    walk = sum(measurements_to_best("random_walk", s) for s in seeds)

    assert tpe < walk


def test_a_window_of_four_asks_four_different_points_and_never_has_more_in_flight(
    optimizer_loop, eighty_space, make_request
):
    sim = optimizer_loop(eighty_space)
    request = make_request(
        eighty_space, operator="optuna_tpe", batch_size=4, seed=2, objective=MAX_TPS
    )
    first = [e for e in sim.send(request) if isinstance(e, SamplesRequested)]
    sim.run()

    asked = [Entity.of(p).id for r in first for p in r.points or ()]
    assert len(set(asked)) == len(asked) == 4
    assert sim.most_in_flight == 4


def test_a_restarted_explorer_proposes_what_the_first_one_would_have(
    optimizer_loop, eighty_space, make_request
):
    request = make_request(
        eighty_space,
        operator="optuna_tpe",
        batch_size=2,
        seed=9,
        objective=MAX_TPS,
        stopping={"max_measurements": 30},
    )
    steady = optimizer_loop(eighty_space)
    steady.send(request)
    steady.run()
    crashing = optimizer_loop(eighty_space)
    crashing.send(request)
    for _ in range(25):
        crashing.step()
    crashing.crash(unpublished=1)
    crashing.restart()
    crashing.run()

    assert points(crashing) == points(steady)


@pytest.mark.parametrize("operator", ["optuna_tpe", "optuna_nsga2"])
@pytest.mark.parametrize("down_at", [6, 10, 14])
def test_an_explorer_down_while_results_arrived_decides_as_one_that_stayed_up(
    optimizer_loop, eighty_space, make_request, operator, down_at
):
    """Two results land while the explorer is down: back, it has two slots to fill and knows
    both results, where the live explorer filled one slot knowing the first, then the other
    knowing both. Each point is chosen knowing as many results as the live one knew."""
    request = make_request(
        eighty_space,
        operator=operator,
        batch_size=2,
        seed=4,
        objective=MAX_TPS,
        stopping={"max_measurements": 24},
    )
    steady = optimizer_loop(eighty_space)
    steady.send(request)
    steady.run()
    crashing = optimizer_loop(eighty_space)
    crashing.send(request)
    for _ in range(down_at):
        crashing.step()
    crashing.answer_draws()
    assert len(crashing.measuring) >= 2
    for _ in range(2):  # measured while the explorer is down: read by nobody
        crashing.log.append(crashing.fakes.measure(crashing.measuring.pop(0), crashing.now))
    crashing.crash()
    crashing.restart()
    crashing.run()

    assert points(crashing) == points(steady)


def test_invalid_results_are_never_asked_again_and_count_as_invalid(
    optimizer_loop, make_space, make_request
):
    space = make_space(NUMERIC)

    def oom_above_64(values, experiment, attempt):
        if values["batch_size"] > 64:
            return ("invalid", "out of memory")
        return ("valid", {"tps": float(values["batch_size"] * values["number_gpus"]), "mem": 1})

    sim = optimizer_loop(space, behaviour=oom_above_64)
    sim.send(make_request(space, operator="optuna_tpe", seed=4, objective=MAX_TPS))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.measured == 40
    assert completed.counts.invalid == 12
    assert completed.best_entity_values == {"batch_size": 64, "number_gpus": 8}


def _oom_at_8_for_bench(values, experiment, attempt):
    if experiment == "energy":
        return ("valid", {"joules": 10.0 * values["number_gpus"] + values["batch_size"]})
    if values["batch_size"] == 8:
        return ("invalid", "out of memory")
    return ("valid", {"tps": float(values["batch_size"] * values["number_gpus"]), "mem": 1})


MIN_JOULES = {"property": "joules", "direction": "min"}


@pytest.mark.parametrize("operator", ["optuna_tpe", "optuna_nsga2"])
def test_a_point_whose_dependent_objective_is_skipped_is_known_infeasible(optimizer_loop, operator):
    """The objective is measured by `energy`, which reads `bench.tps`: where `bench` runs out of
    memory, `energy` is skipped. The point was never told (held in flight for good), and a later
    operation's warm start asked for it again; it is told infeasible, and the later one knows
    every point."""
    space = space_registered(SMALL, (BENCH, ENERGY))
    sim = optimizer_loop(space, behaviour=_oom_at_8_for_bench)
    sim.send(request(space, "op-1", operator="random_walk", seed=1))
    sim.run()
    sim.now += timedelta(hours=1)
    sim.send(request(space, "op-2", operator=operator, seed=1, objective=MIN_JOULES))
    sim.run()

    asked = [r for r in sim.decisions(SamplesRequested) if r.operation_id == "op-2"]
    [done] = [e for e in sim.decisions(OperationCompleted) if e.operation_id == "op-2"]
    assert asked == []
    assert done.stop_reason == "space_exhausted"


def test_an_operation_tells_its_own_skipped_points_as_infeasible(optimizer_loop, monkeypatch):
    told: list = []
    history_of = operator_module.history_of

    def recorded(view, sources, warm_start):
        history = history_of(view, sources, warm_start)
        told.append(history)
        return history

    monkeypatch.setattr(operator_module, "history_of", recorded)
    space = space_registered(SMALL, (BENCH, ENERGY))
    sim = optimizer_loop(space, behaviour=_oom_at_8_for_bench)
    sim.send(request(space, operator="optuna_tpe", seed=1, objective=MIN_JOULES))
    sim.run()

    last = told[-1]
    assert sorted(t.entity["number_gpus"] for t in last.own if t.values is None) == [1, 2]
    assert all(t.entity["batch_size"] == 8 for t in last.own if t.values is None)
    assert last.in_flight == ()


def test_the_candidates_option_keeps_the_search_to_the_listed_points(
    optimizer_loop, eighty_space, make_request
):
    listed = [
        {"batch_size": b, "number_gpus": g, "model": "small"} for b in (1, 8, 64) for g in (1, 2)
    ]
    sim = run(
        optimizer_loop,
        eighty_space,
        make_request,
        operator="optuna_tpe",
        seed=1,
        objective=MAX_TPS,
        options={"candidates": listed},
        batch_size=2,
    )

    [completed] = sim.decisions(OperationCompleted)
    assert sorted(Entity.of(p).id for p in points(sim)) == sorted(Entity.of(p).id for p in listed)
    assert completed.stop_reason == "space_exhausted"


def test_number_entities_is_a_budget_of_points(optimizer_loop, eighty_space, make_request):
    sim = run(
        optimizer_loop,
        eighty_space,
        make_request,
        operator="optuna_nsga2",
        seed=1,
        objective=MAX_TPS,
        number_entities=7,
        batch_size=3,
    )

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "requested_entities_measured"
    assert len(points(sim)) == 7


def test_nsga2_searches_two_objectives_without_repeating_a_point(
    optimizer_loop, eighty_space, make_request
):
    objectives = [MAX_TPS, {"property": "mem", "direction": "min"}]
    sim = run(
        optimizer_loop,
        eighty_space,
        make_request,
        operator="optuna_nsga2",
        seed=3,
        objectives=objectives,
        options={"population_size": 6},
        batch_size=2,
        stopping={"max_measurements": 30},
    )

    asked = [Entity.of(p).id for p in points(sim)]
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "max_measurements"
    assert len(asked) == len(set(asked)) >= 30


def test_cma_es_searches_a_numeric_space_the_same_way_for_the_same_seed(
    optimizer_loop, make_space, make_request
):
    space = make_space(NUMERIC)

    def cma(seed: int) -> list[dict[str, Any]]:
        sim = run(
            optimizer_loop,
            space,
            make_request,
            operator="optuna_cmaes",
            seed=seed,
            objective=MAX_TPS,
            options={"n_startup_trials": 3},
            stopping={"max_measurements": 15},
        )
        return points(sim)

    first = cma(6)
    assert first == cma(6)
    assert len({Entity.of(p).id for p in first}) == len(first) == 15


def test_tpe_searches_a_space_with_a_continuous_property_within_its_budget(
    optimizer_loop, make_space, make_request
):
    space = make_space(CONTINUOUS)
    sim = run(
        optimizer_loop,
        space,
        make_request,
        operator="optuna_tpe",
        seed=2,
        objective=MAX_TPS,
        stopping={"max_measurements": 12},
    )

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "max_measurements"
    assert all(1.0 <= p["batch_size"] <= 64.0 for p in points(sim))


@pytest.mark.parametrize(
    ("operator", "parameters", "reason"),
    [
        ("optuna_tpe", {}, "optuna_tpe needs an objective"),
        (
            "optuna_tpe",
            {"objective": MAX_TPS, "options": {"sampler": "x"}},
            "optuna_tpe has no option 'sampler'",
        ),
        ("optuna_cmaes", {"objective": MAX_TPS}, "property 'model' is categorical"),
        (
            "optuna_cmaes",
            {"options": {"objectives": [MAX_TPS, MAX_TPS]}},
            "optuna_cmaes optimises one objective, but 2 were given",
        ),
        (
            "optuna_tpe",
            {"objective": {"property": "nope", "direction": "max"}},
            "the objective 'nope' is not measured",
        ),
        (
            "optuna_tpe",
            {"objective": MAX_TPS, "objectives": [{"property": "tps", "direction": "min"}]},
            "the objective 'tps' is to maximise, but objectives minimise it: give one direction",
        ),
    ],
)
def test_an_operation_the_optimizer_cannot_run_fails_at_once_with_one_sentence(
    optimizer_loop, eighty_space, make_request, operator, parameters, reason
):
    sim = optimizer_loop(eighty_space)
    [failed] = sim.send(make_request(eighty_space, operator=operator, **parameters))

    assert isinstance(failed, OperationFailed)
    assert reason in failed.reason
    assert "\n" not in failed.reason


def test_a_space_with_a_continuous_property_needs_a_budget(
    optimizer_loop, make_space, make_request
):
    space = make_space(CONTINUOUS)
    sim = optimizer_loop(space)
    [failed] = sim.send(make_request(space, operator="optuna_tpe", objective=MAX_TPS))

    assert isinstance(failed, OperationFailed)
    assert "give optuna_tpe a budget" in failed.reason


def _failed_search(sim, space, objective: dict[str, str]) -> OperationFailed:
    """A TPE search of 20 measurements, 4 at a time, that gave up: its failure."""
    sim.send(
        request(
            space,
            operator="optuna_tpe",
            seed=1,
            batch_size=4,
            objective=objective,
            stopping={"max_measurements": 20},
        )
    )
    sim.run()
    [failed] = sim.decisions(OperationFailed)
    return failed


def test_an_optimizer_whose_measurements_keep_failing_gives_up_saying_so(
    optimizer_loop, make_space
):
    """A budget of 20 measurements counts results only: with every measurement failing, the
    search of a continuous space proposed point after point and never ended."""
    space = make_space(CONTINUOUS)
    sim = optimizer_loop(space, behaviour=lambda values, experiment, attempt: ("fail", False))

    failed = _failed_search(sim, space, MAX_TPS)

    assert failed.reason.startswith("operator 'optuna_tpe' failed: 10 of its ")
    assert failed.reason.endswith(
        "entities failed for good, without a result: the measurements keep failing (their "
        "reasons say why)"
    )
    assert len(points(sim)) <= 10 + 4  # the window in flight when the tenth failed


def test_an_optimizer_whose_dependent_objective_keeps_failing_gives_up(optimizer_loop):
    """`bench` measures every point and `energy` (the objective's experiment) fails for good:
    an entity with a `bench` result counted as answered, so the search never gave up and spent
    its whole budget without one objective value."""
    space = space_registered(CONTINUOUS, (BENCH, ENERGY))

    def energy_fails(values, experiment, attempt):
        return (
            ("fail", False) if experiment == "energy" else throughput(values, experiment, attempt)
        )

    sim = optimizer_loop(space, behaviour=energy_fails)

    failed = _failed_search(sim, space, MIN_JOULES)

    assert failed.reason.startswith("operator 'optuna_tpe' failed: 10 of its ")
    assert failed.counts.failed == 10


@pytest.mark.skipif(
    bool(missing_packages("gp")), reason="optuna_gp needs torch and scipy (the 'gp' extra)"
)
def test_gp_on_a_continuous_space_measures_its_whole_budget(
    optimizer_loop, make_space, make_request
):
    """GP kept suggesting a bound already measured (batch_size 1.0): it ended "found no free
    point to suggest" after 13 to 29 of 40 points, in 11 of 16 runs; a free point is drawn at
    random instead."""
    space = make_space(
        (
            PropertySpec(name="batch_size", type="continuous", range=(1.0, 512.0)),
            PropertySpec(name="number_gpus", values=(1, 2, 4, 8)),
        )
    )

    def peaked(values: dict[str, Any], experiment: str, attempt: int) -> tuple[str, Any]:
        tps = -abs(float(values["batch_size"]) - 37.3) - abs(values["number_gpus"] - 3)
        return ("valid", {"tps": tps, "mem": 1.0})

    for seed in (2, 3):  # before, each ended after 14 points
        sim = optimizer_loop(space, behaviour=peaked)
        request = make_request(
            space, operator="optuna_gp", seed=seed, batch_size=1, number_entities=20,
            objective=MAX_TPS,
        )  # fmt: skip
        sim.send(request)
        sim.run()
        [completed] = sim.decisions(OperationCompleted)
        assert completed.stop_reason == "requested_entities_measured", completed.stop_detail
        assert len({Entity.of(p).id for p in points(sim)}) == 20


def test_gp_without_torch_is_refused_with_what_to_install(
    optimizer_loop, eighty_space, make_request, monkeypatch
):
    monkeypatch.setitem(samplers.NEEDS, "gp", ("torch", "scipy", "discospace_not_a_package"))
    sim = optimizer_loop(eighty_space)
    [failed] = sim.send(make_request(eighty_space, operator="optuna_gp", objective=MAX_TPS))

    assert isinstance(failed, OperationFailed)
    assert "needs the packages" in failed.reason
    assert "'gp' extra" in failed.reason


@pytest.mark.skipif(
    bool(missing_packages("gp")), reason="optuna_gp needs torch and scipy (the 'gp' extra)"
)
def test_gp_on_a_stepped_property_of_too_many_values_is_refused_in_one_sentence(
    optimizer_loop, make_space, make_request
):
    """Optuna's GPSampler builds an array of every value of a stepped property at each ask:
    2^40 values failed the operation with a bare MemoryError (8 TiB)."""
    space = make_space(
        (
            PropertySpec(name="batch_size", range=(0, 2**40), interval=1),
            PropertySpec(name="number_gpus", values=(1, 2)),
        )
    )
    sim = optimizer_loop(space)
    [failed] = sim.send(make_request(space, operator="optuna_gp", objective=MAX_TPS))

    assert isinstance(failed, OperationFailed)
    assert failed.reason.endswith(
        "optuna_gp lists every value of a stepped property to choose among them, and property "
        "'batch_size' has 1,099,511,627,776 (over 16,777,216): use optuna_tpe, or a coarser "
        "interval"
    )


@pytest.mark.skipif(
    bool(missing_packages("gp")),
    reason="torch and scipy are not installed (make test installs them): GP cannot run here",
)
def test_gp_searches_with_points_in_flight_and_invalid_results_the_same_way_for_a_seed(
    optimizer_loop, make_space, make_request
):
    space = make_space(NUMERIC)

    def oom_above_64(values, experiment, attempt):
        if values["batch_size"] > 64:
            return ("invalid", "out of memory")
        return ("valid", {"tps": float(values["batch_size"] * values["number_gpus"]), "mem": 1})

    def gp(seed: int) -> list[dict[str, Any]]:
        sim = optimizer_loop(space, behaviour=oom_above_64)
        rules = {"max_measurements": 14}
        options = {"n_startup_trials": 4}
        sim.send(
            make_request(
                space,
                operator="optuna_gp",
                seed=seed,
                objective=MAX_TPS,
                batch_size=2,
                options=options,
                stopping=rules,
            )
        )
        sim.run()
        return points(sim)

    first = gp(8)
    assert first == gp(8)
    assert len({Entity.of(p).id for p in first}) == len(first) >= 14
