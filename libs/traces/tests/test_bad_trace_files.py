"""A trace file that is not what its reader expects is refused in one sentence naming the file,
and for a bad cell its data row and column; what the published files hold still loads.

Every file here is a small one made in `tmp_path`, in the published CSV formats.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from discospace.traces import fms
from discospace.traces.zeus import Workload, ZeusTrace, ZeusTraceError

FMS_HEADER = (
    "model_name_or_path,num_gpus,per_device_train_batch_size,framework_config,peft_method,"
    "train_runtime,train_tokens_per_second"
)
FMS_ROWS = (
    "org/m,1,2,none,lora,60.0,200.0",
    "org/m,1,4,none,lora,61.5,400.0",
    "org/m,2,8,fast,lora,,",
)
"""The third run did not finish (out of memory): its runtime and throughput are empty."""
FMS_COLUMN = {name: at for at, name in enumerate(FMS_HEADER.split(","))}


def fms_table(path: Path, row: int = 0, column: str = "", value: str = "") -> Path:
    """The small table, with `value` in `column` of data row `row` (from 1) when one is given."""
    rows = [line.split(",") for line in FMS_ROWS]
    if row:
        rows[row - 1][FMS_COLUMN[column]] = value
    path.write_text("\n".join([FMS_HEADER, *(",".join(r) for r in rows)]) + "\n")
    return path


def test_a_table_whose_failed_run_leaves_its_measurements_empty_loads(tmp_path: Path):
    frame = fms.load_table(fms_table(tmp_path / "runs.csv"))

    assert list(frame["validity"]) == [True, True, False]
    assert list(frame["num_gpus"]) == [1, 1, 2]
    assert math.isnan(frame["train_runtime"].iloc[2])


@pytest.mark.parametrize(
    ("row", "column", "value", "problem"),
    [
        (2, "num_gpus", "two", "'two' in column 'num_gpus' of data row 2, which is not a number"),
        (1, "num_gpus", "1.5", "'1.5' in column 'num_gpus' of data row 1, which is not a whole"),
        (3, "num_gpus", "", "an empty cell in column 'num_gpus' of data row 3, where a number"),
        (2, "num_gpus", "0", "'0' in column 'num_gpus' of data row 2, which is not at least 1"),
        (1, "per_device_train_batch_size", "-4", "data row 1, which is not at least 1"),
        (2, "train_runtime", "-1", "'-1' in column 'train_runtime' of data row 2, which is not ab"),
        (
            1,
            "train_runtime",
            "inf",
            "'inf' in column 'train_runtime' of data row 1, which is not a",
        ),
        (2, "train_tokens_per_second", "nan", "data row 2, which is not a finite number"),
        (1, "train_tokens_per_second", "0", "data row 1, which is not above 0"),
        (2, "train_tokens_per_second", "fast", "'fast' in column 'train_tokens_per_second' of"),
        # an int64 column wrapped these to -9223372036854775808, silently
        (1, "num_gpus", "1e19", "'1e19' in column 'num_gpus' of data row 1, which is too large"),
        (2, "per_device_train_batch_size", "10000000000000000", "which is too large (above 2^53"),
    ],
)
def test_a_bad_cell_of_a_needed_number_is_refused_naming_its_row_and_column(
    tmp_path: Path, row: int, column: str, value: str, problem: str
):
    path = fms_table(tmp_path / "runs.csv", row, column, value)

    with pytest.raises(fms.FmsTableError) as refused:
        fms.load_table(path)

    assert str(refused.value).startswith(f"The table {path} has ")
    assert problem in str(refused.value)


def test_a_short_row_is_refused_at_its_first_empty_needed_cell(tmp_path: Path):
    path = tmp_path / "runs.csv"
    path.write_text(f"{FMS_HEADER}\n{FMS_ROWS[0]}\norg/m,1\n")

    with pytest.raises(fms.FmsTableError, match="per_device_train_batch_size' of data row 2"):
        fms.load_table(path)


def test_a_needed_column_named_twice_is_refused_naming_both(tmp_path: Path):
    """pandas reads a second 'num_gpus' as 'num_gpus.1': the first was used, silently."""
    path = tmp_path / "runs.csv"
    rows = [f"{row},4" for row in FMS_ROWS]
    path.write_text("\n".join([f"{FMS_HEADER},num_gpus", *rows]) + "\n")

    with pytest.raises(fms.FmsTableError) as refused:
        fms.load_table(path)

    assert str(refused.value) == (
        f"The table {path} names the column 'num_gpus' more than once (columns 2, 8): "
        "give each column once."
    )


def test_a_table_with_only_a_header_has_no_rows(tmp_path: Path):
    path = tmp_path / "runs.csv"
    path.write_text(FMS_HEADER + "\n")

    with pytest.raises(fms.FmsTableError, match=r"runs\.csv has no rows"):
        fms.load_table(path)


TRAIN_HEADER = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch"
POWER_HEADER = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"
TRAIN_ROWS = (
    "squad,toynet,16,adamw,1e-5,1,84.0,3",
    "squad,toynet,16,adamw,1e-5,2,84.0,nan",
    "squad,toynet,32,adamw,1e-5,1,84.0,",
    "squad,toynet,32,adamw,1e-5,2,84.0,2",
)
"""Squad (6 epochs at most) on a toy network: "nan" and empty both mean never reached."""
POWER_ROWS = (
    "squad,toynet,16,adamw,100,30.0,90.0",
    "squad,toynet,16,adamw,200,20.0,170.0",
    "squad,toynet,32,adamw,100,20.0,95.0",
    "squad,toynet,32,adamw,200,12.0,180.0",
)


def zeus_trace(
    folder: Path, train: str | bytes | None = None, power: str | bytes | None = None
) -> Path:
    """The small Zeus trace for v100 in `folder`, a file's content replaced where given."""
    contents = {
        "summary_train.csv": train if train is not None else _csv(TRAIN_HEADER, TRAIN_ROWS),
        "summary_power_v100.csv": power if power is not None else _csv(POWER_HEADER, POWER_ROWS),
    }
    for name, content in contents.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder


def _csv(header: str, rows: tuple[str, ...]) -> str:
    return "\n".join([header, *rows]) + "\n"


def test_a_small_zeus_trace_loads_with_nan_and_empty_as_never_reached(tmp_path: Path):
    trace = ZeusTrace.load(zeus_trace(tmp_path), "v100")

    runs = trace.runs(Workload("squad", "toynet"), 16)
    assert runs[0] == 3.0
    assert math.isnan(runs[1])
    assert math.isnan(trace.runs(Workload("squad", "toynet"), 32)[0])


@pytest.mark.parametrize(
    ("train", "power", "file", "problem"),
    [
        (b"", None, "summary_train.csv", "is not a readable CSV file (it is empty)"),
        (b"\xff\xfe\x00\x81x", None, "summary_train.csv", "is not a readable CSV file"),
        (TRAIN_HEADER + "\n", None, "summary_train.csv", "has no rows"),
        (
            _csv(TRAIN_HEADER.removesuffix(",target_epoch"), ("squad,toynet,16,adamw,1e-5,1,84",)),
            None,
            "summary_train.csv",
            "has no column 'target_epoch'",
        ),
        (
            _csv(TRAIN_HEADER, (TRAIN_ROWS[0] + ",", *TRAIN_ROWS[1:])),
            None,
            "summary_train.csv",
            "is not a readable CSV file (a row has more cells than the header)",
        ),
        (
            _csv(TRAIN_HEADER, (*TRAIN_ROWS[:2], TRAIN_ROWS[2].replace(",32,", ",big,"))),
            None,
            "summary_train.csv",
            "'big' in column 'batch_size' of data row 3, which is not a number",
        ),
        (
            _csv(TRAIN_HEADER, (TRAIN_ROWS[0].replace(",3", ",soon"),)),
            None,
            "summary_train.csv",
            "'soon' in column 'target_epoch' of data row 1, which is not a number",
        ),
        (  # float() reads it as 150: every table reader of discospace takes ASCII digits only
            None,
            _csv(POWER_HEADER, (POWER_ROWS[0].replace(",100,", ",1_00,"), *POWER_ROWS[1:])),
            "summary_power_v100.csv",
            "'1_00' in column 'power_limit' of data row 1, which is not a number",
        ),
        (
            _csv(TRAIN_HEADER, (TRAIN_ROWS[0].replace(",3", ",٣"), *TRAIN_ROWS[1:])),
            None,
            "summary_train.csv",
            "'٣' in column 'target_epoch' of data row 1, which is not a number",
        ),
        (_csv(TRAIN_HEADER, ("x,y",)), None, "summary_train.csv", "column 'batch_size' of data"),
        (None, b"", "summary_power_v100.csv", "is not a readable CSV file (it is empty)"),
        (None, b"\x00\xff\xfe\x81", "summary_power_v100.csv", "is not a readable CSV file"),
        (None, POWER_HEADER + "\n", "summary_power_v100.csv", "has no rows"),
        (
            None,
            _csv(POWER_HEADER.removesuffix(",average_power"), ("squad,toynet,16,adamw,100,30",)),
            "summary_power_v100.csv",
            "has no column 'average_power'",
        ),
        (
            None,
            _csv(POWER_HEADER, (*POWER_ROWS[:3], POWER_ROWS[3].replace("180.0", "-180.0"))),
            "summary_power_v100.csv",
            "'-180.0' in column 'average_power' of data row 4, which is not above 0",
        ),
        (
            None,
            _csv(POWER_HEADER, (POWER_ROWS[0].replace(",100,", ",137.5,"), *POWER_ROWS[1:])),
            "summary_power_v100.csv",
            "'137.5' in column 'power_limit' of data row 1, which is not a whole number",
        ),
    ],
)
def test_a_zeus_trace_file_that_is_no_trace_is_refused_naming_it(
    tmp_path: Path, train: str | bytes | None, power: str | bytes | None, file: str, problem: str
):
    zeus_trace(tmp_path, train, power)

    with pytest.raises(ZeusTraceError) as refused:
        ZeusTrace.load(tmp_path, "v100")

    assert str(tmp_path / file) in str(refused.value)
    assert problem in str(refused.value)


def test_a_zeus_trace_without_a_workload_of_the_papers_jobs_is_refused(tmp_path: Path):
    other = tuple(row.replace("squad,", "mnist,") for row in TRAIN_ROWS)
    zeus_trace(tmp_path, train=_csv(TRAIN_HEADER, other))

    with pytest.raises(ZeusTraceError, match="give v100 no workload"):
        ZeusTrace.load(tmp_path, "v100")


def test_spaces_around_a_cell_or_a_column_name_are_not_part_of_it(tmp_path: Path):
    """Numbers were stripped and text was not: "squad " matched no workload, which was left
    out without a word; "batch_size " in the header was 'no column batch_size'."""
    spaced = tuple(row.replace("squad,", "squad ,") for row in POWER_ROWS)
    header = POWER_HEADER.replace("batch_size,", "batch_size ,")
    folder = zeus_trace(tmp_path, power=_csv(header, spaced))

    trace = ZeusTrace.load(folder, "v100")

    (tmp_path / "clean").mkdir()
    clean = ZeusTrace.load(zeus_trace(tmp_path / "clean"), "v100")
    assert Workload("squad", "toynet") in trace.workloads
    assert trace.workloads == clean.workloads
    assert trace._power == clean._power  # the power rows read, by workload


def test_a_run_given_twice_in_the_train_trace_is_refused_naming_both_rows(tmp_path: Path):
    """It counted twice in the epochs to the target: the expected costs and the oracle moved
    without a word."""
    again = "squad,toynet,16,adamw,1e-5,1,84.0,"
    folder = zeus_trace(tmp_path, train=_csv(TRAIN_HEADER, (*TRAIN_ROWS, again)))

    with pytest.raises(ZeusTraceError) as refused:
        ZeusTrace.load(folder, "v100")

    assert str(refused.value) == (
        f"The Zeus train trace {folder / 'summary_train.csv'} gives dataset squad, network "
        "toynet, batch_size 16, optimizer adamw, run 1, target_metric 84.0 in more than one row "
        "(data rows 1, 5): give each configuration once."
    )


def test_a_power_row_given_twice_is_refused_naming_both_rows(tmp_path: Path):
    """The second row replaced the first without a word (the published traces repeat none)."""
    again = "squad,toynet,32,adamw,100,99.0,99.0"
    folder = zeus_trace(tmp_path, power="\n".join([POWER_HEADER, *POWER_ROWS, again]) + "\n")

    with pytest.raises(ZeusTraceError) as refused:
        ZeusTrace.load(folder, "v100")

    assert str(refused.value) == (
        f"The Zeus power trace {folder / 'summary_power_v100.csv'} gives dataset squad, network "
        "toynet, batch_size 32, optimizer adamw, power_limit 100 in more than one row (data rows "
        "3, 5): give each configuration once."
    )
