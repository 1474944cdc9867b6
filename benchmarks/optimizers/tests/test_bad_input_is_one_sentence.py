"""`discospace bench optimizers` given bad input: one sentence naming the file (and the row and
column of a bad cell), exit code 2, nothing run, and every result file already there unchanged;
every input is checked before anything runs or is written.

Every table, trace and folder here is a small one made in `tmp_path`.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.bench import common, fms
from discospace.cli.main import app

FMS_HEADER = (
    "model_name_or_path,num_gpus,per_device_train_batch_size,framework_config,peft_method,"
    "train_runtime,train_tokens_per_second"
)
FMS_ROWS = [
    ["org/small", "1", "2", "none", "lora", "60.0", "200.0"],
    ["org/small", "1", "4", "none", "lora", "61.0", "390.0"],
    ["org/small", "2", "4", "fast", "lora", "40.0", "700.0"],
    ["org/large", "2", "8", "fast", "lora", "", ""],
]
"""The last run did not finish: its runtime and throughput are empty, as in the published table."""
EARLIER = '{"name": "fms-runs", "complete": true, "progress": "5 of 5 methods"}\n'


def invoke(*args: str):
    return CliRunner().invoke(app, ["bench", "optimizers", *args])


def write_table(path: Path, bad: tuple[int, str, str] | None = None) -> Path:
    """The small fms table; `bad` puts a value in (data row from 1, column)."""
    rows = [list(row) for row in FMS_ROWS]
    if bad is not None:
        row, column, value = bad
        rows[row - 1][FMS_HEADER.split(",").index(column)] = value
    path.write_text("\n".join([FMS_HEADER, *(",".join(r) for r in rows)]) + "\n")
    return path


def assert_one_sentence(output: str, *parts: str) -> None:
    assert "Traceback" not in output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("error: ")
    for part in parts:
        assert part in output


@pytest.fixture
def quick_fms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two seeds of random sampling: the input, not the optimizers, is under test here."""
    monkeypatch.setattr(fms, "run", partial(fms.run, seeds=(0, 1), methods=("random",)))


@pytest.mark.parametrize(
    ("row", "column", "value", "problem"),
    [
        (2, "num_gpus", "two", "which is not a number"),
        (3, "num_gpus", "1.5", "which is not a whole number"),
        (1, "num_gpus", "", "where a number is needed"),
        (2, "per_device_train_batch_size", "0", "which is not at least 1"),
        (3, "train_runtime", "-1", "which is not above 0"),
        (1, "train_runtime", "nan", "which is not a finite number"),
        (2, "train_tokens_per_second", "inf", "which is not a finite number"),
        (1, "train_tokens_per_second", "0", "which is not above 0"),
        (3, "train_tokens_per_second", "fast", "which is not a number"),
    ],
)
def test_a_table_with_a_bad_cell_is_refused_before_anything_runs_and_keeps_the_earlier_result(
    tmp_path: Path, row: int, column: str, value: str, problem: str
):
    table = write_table(tmp_path / "runs.csv", (row, column, value))
    out = tmp_path / "out"
    out.mkdir()
    (out / "fms-runs.json").write_text(EARLIER)

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(out))

    assert result.exit_code == 2, result.output
    assert_one_sentence(
        result.output, str(table), f"in column '{column}' of data row {row},", problem
    )
    assert (out / "fms-runs.json").read_text() == EARLIER
    assert sorted(p.name for p in out.iterdir()) == ["fms-runs.json"]


def test_a_table_whose_runtime_is_negative_is_refused_before_a_good_table_runs(
    tmp_path: Path,
):
    good = write_table(tmp_path / "a.csv")
    bad = write_table(tmp_path / "b.csv", (2, "train_runtime", "-1"))

    result = invoke(
        "--only", "fms", "--fms-table", str(good), "--fms-table", str(bad), "--out", str(tmp_path)
    )

    assert result.exit_code == 2, result.output
    assert_one_sentence(result.output, f"{bad} has '-1' in column 'train_runtime' of data row 2")
    assert not (tmp_path / "fms-a.json").exists()


@pytest.mark.usefixtures("quick_fms")
def test_a_table_whose_failed_runs_leave_their_measurements_empty_runs(tmp_path: Path):
    table = write_table(tmp_path / "runs.csv")

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(tmp_path / "out"))

    assert result.exit_code == 0, result.output
    stored = json.loads((tmp_path / "out" / "fms-runs.json").read_text())
    assert stored["settings"]["invalid_configurations"] == 1


TRAIN = (
    "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"
    "squad,toynet,16,adamw,1e-5,1,84.0,3\nsquad,toynet,16,adamw,1e-5,2,84.0,nan\n"
    "squad,toynet,32,adamw,1e-5,1,84.0,2\nsquad,toynet,32,adamw,1e-5,2,84.0,3\n"
)
POWER = (
    "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
    "squad,toynet,16,adamw,100,30.0,90.0\nsquad,toynet,16,adamw,200,20.0,170.0\n"
    "squad,toynet,32,adamw,100,20.0,95.0\nsquad,toynet,32,adamw,200,12.0,180.0\n"
)


def without_last_column(text: str) -> str:
    return "".join(line.rsplit(",", 1)[0] + "\n" for line in text.splitlines())


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("summary_train.csv", b"", "is not a readable CSV file (it is empty)"),
        ("summary_train.csv", b"\xff\xfe\x00\x81\x92binary", "is not a readable CSV file"),
        ("summary_train.csv", TRAIN.split("\n")[0] + "\n", "has no rows"),
        ("summary_train.csv", without_last_column(TRAIN), "no column 'target_epoch'"),
        (
            "summary_train.csv",
            TRAIN.replace("nan\n", "nan,9\n"),
            "line 3 has 9 cells where the header has 8",
        ),
        ("summary_power_v100.csv", b"", "is not a readable CSV file (it is empty)"),
        ("summary_power_v100.csv", b"\x00\xff\xfe\x81", "is not a readable CSV file"),
        ("summary_power_v100.csv", POWER.split("\n")[0] + "\n", "has no rows"),
        ("summary_power_v100.csv", without_last_column(POWER), "no column 'average_power'"),
        (
            "summary_power_v100.csv",
            POWER.replace("95.0", "-95.0"),
            "'-95.0' in column 'average_power' of data row 3, which is not above 0",
        ),
    ],
)
def test_a_zeus_trace_file_that_is_no_trace_is_refused_and_keeps_the_earlier_result(
    tmp_path: Path, name: str, content: str | bytes, problem: str
):
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / "summary_train.csv").write_text(TRAIN)
    (folder / "summary_power_v100.csv").write_text(POWER)
    bad = folder / name
    bad.write_bytes(content) if isinstance(content, bytes) else bad.write_text(content)
    (tmp_path / "zeus.json").write_text(EARLIER)

    result = invoke(
        "--only", "zeus", "--gpu", "v100", "--zeus-data", str(folder), "--out", str(tmp_path)
    )

    assert result.exit_code == 2, result.output
    assert_one_sentence(result.output, str(bad), problem)
    assert (tmp_path / "zeus.json").read_text() == EARLIER


def test_a_results_folder_with_too_long_a_name_is_refused_leaving_no_folder(tmp_path: Path):
    table = write_table(tmp_path / "runs.csv")
    out = tmp_path / "new" / ("a" * 300)

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(out))

    assert result.exit_code == 2, result.output
    assert_one_sentence(result.output, "cannot be made or written in (File name too long)")
    assert not (tmp_path / "new").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_results_folder_that_cannot_be_made_is_refused(tmp_path: Path):
    table = write_table(tmp_path / "runs.csv")

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", "/proc/discospace")

    assert result.exit_code == 2, result.output
    assert_one_sentence(result.output, "/proc/discospace")


def test_a_folder_where_a_result_file_goes_is_refused_before_anything_runs(tmp_path: Path):
    table = write_table(tmp_path / "runs.csv")
    (tmp_path / "fms-runs.json").mkdir()

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(tmp_path))

    assert result.exit_code == 2, result.output
    assert_one_sentence(result.output, f"The result file {tmp_path / 'fms-runs.json'} cannot be")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fms-runs.json", "runs.csv"]


@pytest.mark.usefixtures("quick_fms")
def test_a_result_that_cannot_be_written_later_is_one_sentence_leaving_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    table, out = write_table(tmp_path / "runs.csv"), tmp_path / "out"
    real = fms.run_random

    def a_folder_appears_where_the_result_goes(*args, **kwargs):
        (out / "fms-runs.json").mkdir(exist_ok=True)
        return real(*args, **kwargs)

    monkeypatch.setattr(fms, "run_random", a_folder_appears_where_the_result_goes)

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(out))

    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"error: The result file {out / 'fms-runs.json'} cannot be written" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["fms-runs.json"]


def test_a_failed_write_keeps_the_file_it_would_have_replaced(tmp_path: Path):
    kept = tmp_path / "result.json"
    kept.write_text(EARLIER)
    common.partial_path(kept).mkdir()

    with pytest.raises(common.ResultWriteError, match=r"result\.json cannot be written"):
        common.write_file(kept, "{}")

    assert kept.read_text() == EARLIER
