"""The fms sample-efficiency benchmark: its harness, its baseline, and the real table."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest

from discospace.bench import fms
from discospace.bench.common import BenchResult
from discospace.traces.data import TraceDataMissingError, fms_data_dir

RAW_COLUMNS = {
    "train_samples_per_second": 1.0,
    "train_loss": 1.0,
    "mem_peak_torch_mem_alloc_in_bytes": 1.0,
    "mem_nvidia_mem_reserved": 1.0,
    "torch_dtype": "bfloat16",
}


def small_table(folder: Path) -> Path:
    """A table in the published format: 2 models x 2 GPUs x 3 batch sizes x 2 frameworks."""
    rows = []
    for model, scale in (("org/small", 4.0), ("org/large", 1.0)):
        for gpus in (1, 2):
            for batch in (2, 4, 8):
                for framework in ("none", "fast"):
                    fits = model == "org/small" or batch < 8
                    speed = scale * batch * (1.5 if framework == "fast" else 1.0) / gpus
                    rows.append(
                        {
                            "model_name_or_path": model,
                            "num_gpus": gpus,
                            "per_device_train_batch_size": batch,
                            "framework_config": framework,
                            "peft_method": "lora",
                            "train_tokens_per_second": 100 * speed if fits else None,
                            "train_runtime": 60.0 if fits else None,
                            **RAW_COLUMNS,
                        }
                    )
    pd.DataFrame(rows).to_csv(folder / fms.fms.FMS_FILE, index=False)
    return folder


def test_any_table_in_the_published_format_gives_a_result_table_and_json(tmp_path: Path):
    result = fms.run(small_table(tmp_path), seeds=(0, 1, 2), methods=("random", "optuna_tpe"))

    [table] = result.tables
    assert isinstance(result, BenchResult)
    assert [row[:2] for row in table.rows] == [
        (method, start) for method in ("random", "optuna_tpe") for start in fms.STARTS
    ]
    assert all(1 <= r["measurements"] <= 24 for r in result.details["runs"] if r["start"] == "cold")
    assert result.settings["invalid_configurations"] == 4
    assert json.loads(json.dumps(result.to_json()))["name"] == "fms"


def test_two_rows_of_one_configuration_of_the_space_are_refused(tmp_path: Path):
    """The space has no torch_dtype: a row at bfloat16 after the best at float16 replaced it
    in silence, and the benchmark reported another best than the table's."""
    path = small_table(tmp_path) / fms.fms.FMS_FILE
    frame = pd.read_csv(path)
    again = frame.iloc[[0]].assign(torch_dtype="float16", train_tokens_per_second=1.0)
    pd.concat([frame, again]).to_csv(path, index=False)

    with pytest.raises(fms.FmsTableError) as refused:
        fms.read_table(path)
    assert str(refused.value).startswith(
        f"Data rows 1 and {len(frame) + 1} of the table are one configuration of the "
        "benchmark's space (model=org/small, num_gpus=1, per_device_train_batch_size=2, "
    )
    assert str(refused.value).endswith("it has no torch_dtype): give each configuration once.")


def test_random_sampling_needs_on_average_what_the_exact_formula_says(tmp_path: Path):
    table = fms.table_of(fms.fms.load(small_table(tmp_path)))
    mean, median = fms.random_expectation(table)

    counts = [fms.run_random(table, seed=s, known=[]).measurements for s in range(2000)]

    assert statistics.fmean(counts) == pytest.approx(mean, rel=0.05)
    assert abs(statistics.median(counts) - median) <= 1


def test_a_warm_start_with_the_best_hidden_never_holds_a_row_near_the_best(tmp_path: Path):
    table = fms.table_of(fms.fms.load(small_table(tmp_path)))

    known = fms.warm_half(table, seed=4, hide_best=True)

    assert len(known) == len(table.rows) // 2
    assert not any(table.near_best(i) for i in known)


def real_table() -> fms.Table:
    try:
        return fms.table_of(fms.fms.load(fms_data_dir()))
    except TraceDataMissingError as error:
        pytest.skip(str(error))


def test_on_the_real_table_tpe_needs_at_most_half_the_measurements_of_random_sampling():
    table = real_table()
    _, random_median = fms.random_expectation(table)

    tpe = [fms.run_method(table, "optuna_tpe", s, "cold").measurements for s in range(20)]

    assert statistics.median(tpe) <= random_median / 2
