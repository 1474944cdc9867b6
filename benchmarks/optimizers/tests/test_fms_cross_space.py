"""The cross-space benchmark: each model's sub-space searched with the other models' results."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from discospace.bench import fms, fms_cross_space
from discospace.bench.harness import run_operation
from discospace.events import Objective, OperationParameters, StoppingRules
from discospace.traces.data import TraceDataMissingError, fms_data_dir

from .test_optuna_fms_bench import small_table


def test_each_model_is_a_sub_space_and_the_other_models_are_outside_it(tmp_path: Path):
    table = fms.read_table(small_table(tmp_path) / fms.fms.FMS_FILE)
    spaces = fms_cross_space.model_spaces(table)
    assert [s.model for s in spaces] == ["org/large", "org/small"]
    large = spaces[0]
    assert len(large.table.rows) == 12
    assert len(large.others) == 12
    assert large.table.best == pytest.approx(100 * 1.0 * 4 * 1.5)


def test_the_other_models_reach_the_operator_as_results_elsewhere_not_reused(tmp_path: Path):
    table = fms.read_table(small_table(tmp_path) / fms.fms.FMS_FILE)
    large = fms_cross_space.model_spaces(table)[0]
    parameters = OperationParameters(
        batch_size=1,
        seed=0,
        objective=Objective(property=fms.TARGET, direction="max"),
        stopping=StoppingRules(target_value=large.table.target),
        options={"candidates": large.table.points()},
    )
    prior = [fms.prior_of(table, i) for i in large.others]
    record = run_operation(
        large.table.event, "optuna_tpe", parameters, large.table.measure, prior=prior
    )
    assert not any(o.reused for o in record.outcomes)
    assert record.requested[0]["framework_config"] == "fast", "the small model's best first"
    assert all(p["model"] == "org/large" for p in record.requested)


def test_the_benchmark_writes_a_row_per_model_and_operator(tmp_path: Path):
    result = fms_cross_space.run(
        small_table(tmp_path), seeds=(0, 1), methods=("random", "optuna_tpe")
    )
    [table] = result.tables
    assert [row[:4] for row in table.rows] == [
        ("org/large", 12, 1, "optuna_tpe"),
        ("org/small", 12, 1, "optuna_tpe"),
    ]
    assert result.complete
    assert json.loads(json.dumps(result.to_json()))["name"] == "fms-cross-space"
    runs = result.details["runs"]
    assert sorted({(r["method"], r["start"]) for r in runs}) == [
        ("optuna_tpe", "cold"),
        ("optuna_tpe", "warm"),
        ("random", "cold"),
    ]
    assert all(1 <= r["measurements"] <= 12 for r in runs)


def test_on_the_real_table_other_models_halve_the_measurements_of_most_7b_and_70b_models():
    try:
        table = fms.read_table(fms.fms.table_path(fms_data_dir()))
    except TraceDataMissingError as error:
        pytest.skip(str(error))
    spaces = {s.model: s for s in fms_cross_space.model_spaces(table)}
    space = spaces["mistralai/Mistral-7B-v0.1"]
    medians = {
        start: statistics.median(
            fms_cross_space.run_model(table, space, "optuna_tpe", seed, start).measurements
            for seed in range(5)
        )
        for start in fms_cross_space.STARTS
    }
    assert medians["warm"] <= medians["cold"] / 2
