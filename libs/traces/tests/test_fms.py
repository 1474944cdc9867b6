"""The fms-acceleration table, typed (skipped without ../shared/data, except the small table)."""

import csv
from pathlib import Path

import pandas as pd
import pytest

from discospace.traces import fms

HEADER = (
    "model_name_or_path,num_gpus,per_device_train_batch_size,framework_config,peft_method,"
    "torch_dtype,mem_nvidia_mem_reserved,mem_peak_torch_mem_alloc_in_bytes,train_loss,"
    "train_runtime,train_samples_per_second,train_tokens_per_second"
)


def test_a_small_table_is_typed_with_none_for_a_full_fine_tune(tmp_path: Path) -> None:
    (tmp_path / "a100_80gb.csv").write_text(
        f"{HEADER}\nm1,1,4,none,,bfloat16,15116,1126,2.3,47.6,8.3,17188.2\n"
        "m1,2,8,foak,lora,float16,80000,,,,,\n"
    )
    frame = fms.load(tmp_path)
    assert list(frame["peft_method"]) == ["none", "lora"]
    assert list(frame["validity"]) == [True, False]
    assert frame["throughput"].iloc[0] == 17188.2
    assert pd.isna(frame["memory"].iloc[1])
    assert frame["num_gpus"].dtype == "int64"
    assert list(frame.columns[:6]) == list(fms.CONFIGURATION)


def test_the_real_table_keeps_every_run_and_marks_those_without_throughput_invalid(
    shared_data: Path,
) -> None:
    with (shared_data / "fms-acceleration-a100" / "a100_80gb.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    frame = fms.load(shared_data)
    assert len(frame) == len(rows)
    assert not frame.duplicated(list(fms.CONFIGURATION)).any()
    assert int((~frame["validity"]).sum()) == sum(not r["train_tokens_per_second"] for r in rows)
    assert set(frame["peft_method"]) == {"none", "lora"}
    assert set(frame["num_gpus"]) == {1, 2}
    assert set(frame["per_device_train_batch_size"]) == {2, 4, 8}
    assert (frame.loc[frame["validity"], "throughput"] > 0).all()


def test_a_table_of_any_file_name_with_the_needed_columns_loads(tmp_path: Path) -> None:
    # Only the columns the benchmark reads: no dtype, loss, memory or samples per second.
    path = tmp_path / "my_runs.csv"
    path.write_text(
        "model_name_or_path,num_gpus,per_device_train_batch_size,framework_config,peft_method,"
        "train_runtime,train_tokens_per_second\nm1,1,4,none,,47.6,17188.2\nm1,2,8,foak,lora,,\n"
    )

    frame = fms.load_table(path)

    assert list(frame["validity"]) == [True, False]
    assert list(frame["torch_dtype"]) == ["", ""]
    assert frame["memory"].isna().all()


def test_a_table_missing_a_needed_column_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        "model_name_or_path,num_gpus,per_device_train_batch_size,peft_method,train_runtime,"
        "train_tokens_per_second\nm1,1,4,lora,47.6,17188.2\n"
    )

    with pytest.raises(fms.FmsTableError, match=r"runs\.csv has no column 'framework_config'"):
        fms.load_table(path)
