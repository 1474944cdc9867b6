"""Optuna searches learn from other spaces' results in the store (`optuna_search/transfer.py`)
and adapt their random start to the space (`study.default_startup`)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from discospace.core import (
    Entity,
    EntitySpace,
    Objective,
    PropertySpec,
    parameterized_experiment_id,
)
from discospace.core.results import ObjectiveSource
from discospace.events import (
    MeasurementCompleted,
    OperationRequested,
    SamplesRequested,
    measurement_request_id,
)
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.operators.known import known_operators
from discospace.explorer.operators.optuna_search.history import Source, Told
from discospace.explorer.operators.optuna_search.study import default_startup
from discospace.explorer.operators.optuna_search.transfer import INVALID, OPTIMISM, transfer_of

from .conftest import T0, request, space_registered

BENCH_ID = parameterized_experiment_id("bench", {})
GRID = (
    PropertySpec(name="batch_size", values=(1, 2, 4, 8, 16, 32)),
    PropertySpec(name="number_gpus", values=(1, 2, 4, 8)),
)
SMALL_MODEL = (*GRID, PropertySpec(name="model", values=("small",)))
MAX_TPS = {"property": "tps", "direction": "max"}
SOURCE = Source(Objective(property="tps", direction="max"), ObjectiveSource(BENCH_ID, "tps"))


def _tps(values: dict[str, Any]) -> float:
    return float(values["batch_size"] * values["number_gpus"])


def _pair(values: dict[str, Any], tps: float | None) -> PairResult:
    return PairResult(
        entity_id=Entity.of(values).id,
        entity_values=values,
        experiment_id=BENCH_ID,
        is_valid=tps is not None,
        values={"tps": tps} if tps is not None else {},
        invalid_reason=None if tps is not None else "out of memory",
        reused=False,
    )


def _large_model(number: int, values: dict[str, Any], tps: float | None) -> MeasurementCompleted:
    """A result of the same experiment measured through another space (model 'large')."""
    values = {**values, "model": "large"}
    cause = OperationRequested(
        event_id="request-op-large",
        occurred_at=T0,
        operation_id="op-large",
        space_id="large-space",
        operator="random_walk",
        requested_by="tester",
    )
    entity = Entity.of(values)
    return MeasurementCompleted.caused_by(
        cause,
        T0 - timedelta(hours=1) + timedelta(seconds=number),
        number,
        operation_id="op-large",
        request_id=measurement_request_id("op-large", entity.id, BENCH_ID),
        space_id="large-space",
        sample_store="store-a",
        entity_id=entity.id,
        entity_values=values,
        experiment_id=BENCH_ID,
        worker_id="w0",
        values={"tps": tps, "mem": 1} if tps is not None else {},
        is_valid=tps is not None,
        invalid_reason=None if tps is not None else "out of memory",
        uncertainty={},
        duration_seconds=1.0,
    )


def test_a_task_ranks_the_points_it_speaks_for_and_invalid_ones_last():
    space = EntitySpace.from_specs(SMALL_MODEL)
    elsewhere = [
        _pair({"batch_size": 1, "number_gpus": 1, "model": "large"}, 10.0),
        _pair({"batch_size": 32, "number_gpus": 8, "model": "large"}, None),
        _pair({"batch_size": 16, "number_gpus": 8, "model": "large"}, 90.0),
    ]
    transfer = transfer_of(elsewhere, SOURCE, space)
    assert transfer is not None
    assert [task.context for task in transfer.tasks] == [((("model", "large"),), ())]
    points = [
        Entity.of({"batch_size": b, "number_gpus": g, "model": "small"})
        for b, g in ((1, 1), (32, 8), (16, 8), (2, 2))
    ]
    scores = transfer.scores(points, [])
    assert scores is not None
    assert scores[2] == 1.0
    assert scores[0] == 0.0
    assert scores[1] < 0.0
    assert 0.0 < scores[3] < 1.0, "a point no task speaks for is neither preferred nor avoided"


def test_results_lacking_a_property_of_the_space_are_a_task_of_their_own():
    """Results of another set of properties (a rig whose GPU count is no property) shared the
    context of the results that have it, and were scaled with them: thousands of tokens per
    second beside single digits, every one of theirs scored the task's worst."""
    space = EntitySpace.from_specs(SMALL_MODEL)
    with_gpus = [
        _pair({"batch_size": b, "number_gpus": g, "model": "large"}, 1000.0 * b * g)
        for b in (1, 8, 32)
        for g in (1, 8)
    ]
    rig = ((1, 6.0), (8, 3.0), (32, 1.0))
    without = [_pair({"batch_size": b, "model": "large"}, tps) for b, tps in rig]
    transfer = transfer_of(with_gpus + without, SOURCE, space)
    assert transfer is not None
    by_context = {task.context: task for task in transfer.tasks}
    own = by_context[((("model", "large"),), ("number_gpus",))]
    assert [score for _, score in own.results] == [1.0, 0.4, 0.0]  # its own ranking, kept
    assert len(by_context[((("model", "large"),), ())].results) == 6


def test_a_task_that_ranks_the_known_points_backwards_is_not_followed():
    space = EntitySpace.from_specs(SMALL_MODEL)
    elsewhere = [
        _pair({"batch_size": 1, "number_gpus": 1, "model": "large"}, 90.0),
        _pair({"batch_size": 32, "number_gpus": 8, "model": "large"}, 10.0),
    ]
    transfer = transfer_of(elsewhere, SOURCE, space)
    assert transfer is not None
    told = [
        Told(Entity.of({"batch_size": 1, "number_gpus": 1, "model": "small"}), (1.0,)),
        Told(Entity.of({"batch_size": 32, "number_gpus": 8, "model": "small"}), (256.0,)),
    ]
    assert transfer.scores([told[0].entity], told) is None


def test_a_point_only_a_distrusted_task_speaks_for_scores_neutral():
    """One task ranks the known points backwards (weight 0), another is trusted: a point only
    the distrusted task speaks for gets the trusted tasks' mean, not a division by zero."""
    space = EntitySpace.from_specs((*GRID, PropertySpec(name="model", values=("small",))))
    elsewhere = [
        _pair({"batch_size": 1, "number_gpus": 1, "model": "large"}, 90.0),
        _pair({"batch_size": 32, "number_gpus": 8, "model": "large"}, 10.0),
        _pair({"batch_size": 2, "number_gpus": 1, "model": "large"}, 80.0),
        _pair({"batch_size": 1, "number_gpus": 1, "model": "medium"}, 5.0),
        _pair({"batch_size": 32, "number_gpus": 8, "model": "medium"}, 50.0),
    ]
    transfer = transfer_of(elsewhere, SOURCE, space)
    assert transfer is not None
    told = [
        Told(Entity.of({"batch_size": 1, "number_gpus": 1, "model": "small"}), (1.0,)),
        Told(Entity.of({"batch_size": 32, "number_gpus": 8, "model": "small"}), (256.0,)),
    ]
    only_large = Entity.of({"batch_size": 2, "number_gpus": 1, "model": "small"})
    scores = transfer.scores([only_large], told)
    assert scores is not None, "the medium model ranks the known points right: it is trusted"
    assert scores == [0.5], "the trusted task's mean score: neither preferred nor avoided"


def test_a_point_the_tasks_disagree_on_comes_before_one_they_all_call_good():
    """The large model's best batch size runs out of memory for the medium one; the batch size
    both score 0.7 is safe but no task's best. Their mean says the safe one (0.25 against 0.7);
    the optimism over the tasks (mean plus `OPTIMISM` standard deviations) measures the
    disputed one first, and a point both tasks agree on keeps its mean."""
    space = EntitySpace.from_specs(SMALL_MODEL)
    elsewhere = [
        _pair({"batch_size": 8, "number_gpus": 1, "model": "large"}, 100.0),
        _pair({"batch_size": 4, "number_gpus": 1, "model": "large"}, 70.0),
        _pair({"batch_size": 1, "number_gpus": 1, "model": "large"}, 0.0),
        _pair({"batch_size": 8, "number_gpus": 1, "model": "medium"}, None),
        _pair({"batch_size": 4, "number_gpus": 1, "model": "medium"}, 70.0),
        _pair({"batch_size": 2, "number_gpus": 1, "model": "medium"}, 100.0),
        _pair({"batch_size": 1, "number_gpus": 1, "model": "medium"}, 0.0),
    ]
    transfer = transfer_of(elsewhere, SOURCE, space)
    assert transfer is not None
    disputed, agreed = (
        Entity.of({"batch_size": b, "number_gpus": 1, "model": "small"}) for b in (8, 4)
    )
    scores = transfer.scores([disputed, agreed], [])
    assert scores is not None
    mean, spread = (1.0 + INVALID) / 2, (1.0 - INVALID) / 2
    assert scores[0] == pytest.approx(mean + OPTIMISM * spread)
    assert scores[1] == pytest.approx(0.7)
    assert scores[0] > scores[1]


def test_a_single_result_elsewhere_is_nothing_to_rank():
    space = EntitySpace.from_specs(SMALL_MODEL)
    one = [_pair({"batch_size": 1, "number_gpus": 1, "model": "large"}, 10.0)]
    assert transfer_of(one, SOURCE, space) is None


@pytest.mark.parametrize(
    ("size", "startup"), [(1, 2), (4, 2), (9, 3), (28, 5), (124, 10), (10_000, 10), (math.inf, 10)]
)
def test_the_random_start_is_the_square_root_of_the_space_between_2_and_10(size, startup):
    assert default_startup(size) == startup


def _first_points(
    loop, *, seed: int, transfer: bool, count: int = 3, batch_size: int = 1
) -> list[dict[str, Any]]:
    space = space_registered(SMALL_MODEL)
    sim = loop(space)
    sim.engine = Engine(known_operators(), sim.timing)
    grid = [(b, g) for b in (1, 2, 4, 8, 16, 32) for g in (1, 2, 4, 8)]
    for number, (b, g) in enumerate(grid):
        values = {"batch_size": b, "number_gpus": g}
        sim.send(_large_model(number, values, _tps(values) if b * g < 256 else None))
    options = {"transfer": transfer}
    sim.send(
        request(
            space,
            "op-small",
            operator="optuna_tpe",
            batch_size=batch_size,
            seed=seed,
            objective=MAX_TPS,
            options=options,
        )
    )
    for _ in range(count * 4):
        sim.step()
    points = [dict(p) for r in sim.decisions(SamplesRequested) for p in r.points or ()]
    return points[:count]


def test_other_models_results_choose_the_first_points_of_a_new_model(loop):
    first = _first_points(loop, seed=3, transfer=True)
    assert [_tps(p) for p in first] == [128.0, 128.0, 64.0], "the valid best of 'large' first"


def test_without_transfer_the_first_points_are_random(loop):
    first = [_first_points(loop, seed=seed, transfer=False, count=1)[0] for seed in (3, 4, 5)]
    assert any(_tps(p) < 128 for p in first)


def test_the_same_seed_transfers_the_same_points(loop):
    assert _first_points(loop, seed=7, transfer=True) == _first_points(loop, seed=7, transfer=True)


def test_a_first_request_wider_than_the_transferred_share_draws_the_rest_at_random(loop):
    """24 points: a start-up of 5, of which 4 transferred. A request of 10 took all 10 from
    the transfer's ranking, none at random (the check a misleading task gets)."""
    first = _first_points(loop, seed=3, transfer=True, count=10, batch_size=10)
    grid = [{"batch_size": b, "number_gpus": g} for b in (1, 2, 4, 8, 16, 32) for g in (1, 2, 4, 8)]
    ranked = sorted(
        (_tps(p) for p in grid if p["batch_size"] * p["number_gpus"] < 256), reverse=True
    )

    assert len(first) == 10
    assert [_tps(p) for p in first[:4]] == ranked[:4]
    assert sorted((_tps(p) for p in first[4:]), reverse=True) != ranked[4:10]
