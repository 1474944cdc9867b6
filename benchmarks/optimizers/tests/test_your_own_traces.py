"""`discospace bench optimizers` on a user's own traces: any GPU name whose power trace exists,
(batch size, power limit) rows a trace lacks, results written as each workload finishes, and the
fms part on any table with the needed columns.

Every trace here is a small file made in `tmp_path`, in the published CSV formats.
"""

from __future__ import annotations

import io
import json
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from discospace.bench import command, fms, zeus
from discospace.bench.zeus_sim import Simulator, simulate_operator, simulate_random
from discospace.cli.main import app
from discospace.explorer.operators.zeus.policy import ZeusSettings
from discospace.traces.zeus import Workload, ZeusTrace

TRAIN_HEADER = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch"
POWER_HEADER = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"
TRAIN = {16: (3, 4, None), 32: (3, 3, 3), 64: (4, 2, 3)}
"""Target epochs by batch size and run (squad: 6 epochs at most; None never reached)."""
POWER = {
    (16, 100): (30.0, 90.0),
    (16, 200): (20.0, 170.0),
    (32, 100): (20.0, 95.0),
    (32, 200): (12.0, 180.0),
    (64, 100): (14.0, 98.0),
    (64, 200): (8.0, 190.0),
}
"""(seconds per epoch, watts) by (batch size, power limit)."""
TOY = Workload("squad", "toynet")


def write_trace(
    folder: Path,
    gpu: str = "v100",
    networks: tuple[str, ...] = ("toynet",),
    lacking: tuple[tuple[int, int], ...] = (),
) -> Path:
    """A Zeus trace of squad workloads for `gpu`, without the power rows in `lacking`."""
    train, power = [TRAIN_HEADER], [POWER_HEADER]
    for network in networks:
        for batch_size, epochs in TRAIN.items():
            for run, epoch in enumerate(epochs, start=1):
                shown = "" if epoch is None else str(epoch)
                train.append(f"squad,{network},{batch_size},adamw,1e-5,{run},84.0,{shown}")
        for (batch_size, limit), (seconds, watts) in POWER.items():
            if (batch_size, limit) not in lacking:
                power.append(f"squad,{network},{batch_size},adamw,{limit},{seconds},{watts}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary_train.csv").write_text("\n".join(train) + "\n")
    (folder / f"summary_power_{gpu}.csv").write_text("\n".join(power) + "\n")
    return folder


def invoke(*args: str):
    return CliRunner().invoke(app, ["bench", "optimizers", *args])


def test_a_gpu_of_any_name_is_benchmarked_when_its_power_trace_exists(tmp_path: Path):
    folder, out = write_trace(tmp_path / "trace", gpu="l4"), tmp_path / "out"

    result = invoke("--only", "zeus", "--gpu", "L4", "--zeus-data", str(folder), "--out", str(out))

    assert result.exit_code == 0, result.output
    stored = json.loads((out / "zeus.json").read_text())
    assert stored["settings"]["gpus"] == ["l4"]
    assert [w["gpu"] for w in stored["details"]["workloads"]] == ["l4"]


def test_a_gpu_is_named_as_its_power_trace_in_any_case_and_benchmarked_once(tmp_path: Path):
    """`summary_power_A40.csv` could not be chosen (`--gpu A40` was read as a40), and a GPU
    given twice was benchmarked and reported twice."""
    folder, out = write_trace(tmp_path / "trace", gpu="A40"), tmp_path / "out"

    args = ("--gpu", "a40", "--gpu", "A40", "--zeus-data", str(folder), "--out", str(out))
    result = invoke("--only", "zeus", *args)

    assert result.exit_code == 0, result.output
    stored = json.loads((out / "zeus.json").read_text())
    assert stored["settings"]["gpus"] == ["A40"]
    assert [w["gpu"] for w in stored["details"]["workloads"]] == ["A40"]


def test_a_gpu_without_a_power_trace_is_refused_naming_those_there(tmp_path: Path):
    folder = write_trace(tmp_path, gpu="l4")

    result = invoke("--only", "zeus", "--gpu", "h100", "--zeus-data", str(folder))

    assert result.exit_code == 2
    assert "GPU 'h100'" in result.output
    assert "power traces there: l4" in result.output
    assert "Traceback" not in result.output


def test_without_a_gpu_every_power_trace_in_the_folder_is_benchmarked(tmp_path: Path):
    write_trace(tmp_path, gpu="l4")
    write_trace(tmp_path, gpu="v100")

    result = zeus.run(tmp_path, seeds=(0,))

    assert result.settings["gpus"] == ["v100", "l4"]


def test_a_folder_without_any_power_trace_says_so(tmp_path: Path):
    (write_trace(tmp_path) / "summary_power_v100.csv").unlink()

    result = invoke("--only", "zeus", "--zeus-data", str(tmp_path))

    assert result.exit_code == 2
    assert "holds no power trace (summary_power_<gpu>.csv)" in result.output


def lacking_trace(tmp_path: Path) -> ZeusTrace:
    return ZeusTrace.load(write_trace(tmp_path, lacking=((64, 200), (16, 100))), "v100")


def test_random_choice_and_zeus_bso_never_run_a_combination_the_trace_lacks(tmp_path: Path):
    sim = Simulator(lacking_trace(tmp_path), TOY, ZeusSettings())
    available = {(32, 100), (32, 200), (64, 100), (16, 200)}

    for seed in range(10):
        randoms = simulate_random(sim, seed, sim.recurrences())
        zeus_runs = simulate_operator(sim, seed, sim.recurrences())
        assert {(a.batch_size, a.power_limit) for a in randoms} <= available
        assert {(a.batch_size, a.power_limit) for a in zeus_runs} <= available
    assert sim.recurrences() == 2 * len(available)


def test_the_benchmark_says_how_many_combinations_were_unavailable(tmp_path: Path):
    write_trace(tmp_path, lacking=((64, 200),))

    result = zeus.run(tmp_path, gpus=("v100",), seeds=range(10))

    [workload] = result.details["workloads"]
    assert workload["unavailable"] == [[64, 200]]
    assert (workload["oracle_batch_size"], workload["oracle_power_limit"]) != (64, 200)
    assert any("1 of 6" in note and "squad/toynet" in note for note in result.notes)


def test_a_trace_with_every_row_says_none_was_unavailable(tmp_path: Path):
    result = zeus.run(write_trace(tmp_path), gpus=("v100",), seeds=(0,))

    assert any(note.startswith("unavailable") and "none" in note for note in result.notes)


def crash_on_workload(monkeypatch: pytest.MonkeyPatch, number: int, error: BaseException) -> None:
    """Make the benchmark of the `number`-th workload (from 1) raise `error`."""
    real, calls = zeus.bench_workload, []

    def bench(*args, **kwargs):
        calls.append(1)
        if len(calls) == number:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(zeus, "bench_workload", bench)


def run_zeus(folder: Path, out: Path) -> str:
    shown = io.StringIO()
    console = Console(file=shown, width=200)
    try:
        command.run(["zeus"], zeus_data=folder, gpus=("v100",), out=out, console=console)
    finally:
        printed = shown.getvalue()
    return printed


def test_each_workload_is_written_as_soon_as_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = write_trace(tmp_path, networks=("toynet", "othernet", "thirdnet"))
    crash_on_workload(monkeypatch, 3, RuntimeError("a bug in the third workload"))

    with pytest.raises(RuntimeError):
        run_zeus(folder, tmp_path / "out")

    stored = json.loads((tmp_path / "out" / "zeus.json").read_text())
    assert [w["workload"] for w in stored["details"]["workloads"]] == [
        "squad/othernet",
        "squad/thirdnet",
    ]
    assert stored["complete"] is False
    assert stored["progress"] == "2 of 3 workloads"


def test_progress_is_shown_as_workloads_finish_and_an_interrupt_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = write_trace(tmp_path, networks=("toynet", "othernet"))
    crash_on_workload(monkeypatch, 2, KeyboardInterrupt())
    shown = io.StringIO()

    with pytest.raises(KeyboardInterrupt):
        command.run(
            ["zeus"], zeus_data=folder, out=tmp_path, console=Console(file=shown, width=200)
        )

    printed = shown.getvalue()
    assert "zeus 1/2 v100 squad/othernet" in printed
    assert "stopped after 1 of 2 workloads" in printed
    assert str(tmp_path / "zeus.json") in printed


def test_a_rerun_says_what_the_file_held_before_replacing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    folder = write_trace(tmp_path, networks=("toynet", "othernet"))
    crash_on_workload(monkeypatch, 2, RuntimeError("stopped"))
    with pytest.raises(RuntimeError):
        run_zeus(folder, tmp_path / "out")
    monkeypatch.undo()

    printed = run_zeus(folder, tmp_path / "out")

    assert "held an unfinished run (1 of 2 workloads)" in printed
    stored = json.loads((tmp_path / "out" / "zeus.json").read_text())
    assert (stored["complete"], stored["progress"]) == (True, "2 of 2 workloads")


FMS_COLUMNS = (
    "model_name_or_path",
    "num_gpus",
    "per_device_train_batch_size",
    "framework_config",
    "peft_method",
    "train_runtime",
    "train_tokens_per_second",
)


def write_table(path: Path, drop: str | None = None) -> Path:
    """A small fms table with only the needed columns (`drop` left out): 2 models x 3 batch
    sizes x 2 frameworks, the large model out of memory at batch size 8."""
    rows = []
    for model, scale in (("org/small", 4.0), ("org/large", 1.0)):
        for batch in (2, 4, 8):
            for framework in ("none", "fast"):
                fits = model == "org/small" or batch < 8
                speed = scale * batch * (1.5 if framework == "fast" else 1.0)
                values = (model, 1, batch, framework, "lora", 60.0, 100 * speed)
                rows.append(dict(zip(FMS_COLUMNS, values if fits else values[:5], strict=False)))
    frame = pd.DataFrame(rows, columns=list(FMS_COLUMNS))
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.drop(columns=[drop] if drop else []).to_csv(path, index=False)
    return path


@pytest.fixture
def quick_fms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two seeds of random sampling: the tables, not the optimizers, are under test here."""
    monkeypatch.setattr(fms, "run", partial(fms.run, seeds=(0, 1), methods=("random",)))


@pytest.mark.usefixtures("quick_fms")
def test_the_fms_part_runs_on_a_table_of_any_file_name(tmp_path: Path):
    table, out = write_table(tmp_path / "my runs" / "mine.csv"), tmp_path / "out"

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(out))

    assert result.exit_code == 0, result.output
    stored = json.loads((out / "fms-mine.json").read_text())
    assert stored["settings"]["table"] == str(table)
    assert stored["settings"]["configurations"] == 12


@pytest.mark.usefixtures("quick_fms")
@pytest.mark.parametrize("pattern", ["{dir}", "{dir}/*.csv", "{dir}/[ab].csv"])
def test_the_fms_part_takes_a_folder_or_a_glob_of_tables(tmp_path: Path, pattern: str):
    for name in ("a", "b"):
        write_table(tmp_path / "tables" / f"{name}.csv")
    given = pattern.format(dir=tmp_path / "tables")

    result = invoke("--only", "fms", "--fms-table", given, "--out", str(tmp_path / "out"))

    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["fms-a.json", "fms-b.json"]


def test_a_table_missing_a_needed_column_is_refused_naming_it(tmp_path: Path):
    table = write_table(tmp_path / "runs.csv", drop="train_runtime")

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(tmp_path / "out"))

    assert result.exit_code == 2
    assert "has no column 'train_runtime'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_pattern_matching_no_table_is_refused(tmp_path: Path):
    result = invoke("--only", "fms", "--fms-table", str(tmp_path / "none*.csv"))

    assert result.exit_code == 2
    assert "no table matches" in result.output


@pytest.mark.usefixtures("quick_fms")
def test_every_table_is_checked_before_any_runs(tmp_path: Path):
    good = write_table(tmp_path / "a.csv")
    bad = write_table(tmp_path / "b.csv", drop="peft_method")

    result = invoke(
        "--only", "fms", "--fms-table", str(good), "--fms-table", str(bad), "--out", str(tmp_path)
    )

    assert result.exit_code == 2
    assert "b.csv has no column 'peft_method'" in result.output
    assert not (tmp_path / "fms-a.json").exists()


@pytest.mark.usefixtures("quick_fms")
def test_each_fms_table_is_written_as_soon_as_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    tables = [write_table(tmp_path / "tables" / f"{name}.csv") for name in ("a", "b")]
    real, calls = fms.run_random, []

    def crash_in_the_second_table(*args, **kwargs):
        calls.append(1)
        if len(calls) > len(fms.STARTS) * 2:
            raise RuntimeError("a bug in the second table")
        return real(*args, **kwargs)

    monkeypatch.setattr(fms, "run_random", crash_in_the_second_table)
    shown = io.StringIO()

    with pytest.raises(RuntimeError):
        command.run(["fms"], fms_tables=tables, out=tmp_path / "out", console=Console(file=shown))

    stored = json.loads((tmp_path / "out" / "fms-a.json").read_text())
    assert (stored["complete"], stored["progress"]) == (True, "1 of 1 methods")
    assert not (tmp_path / "out" / "fms-b.json").exists()
    assert "fms a: random done" in shown.getvalue()


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00binary"])
def test_a_table_that_is_no_csv_is_one_line(tmp_path: Path, content: bytes):
    table = tmp_path / "runs.csv"
    table.write_bytes(content)

    result = invoke("--only", "fms", "--fms-table", str(table), "--out", str(tmp_path / "out"))

    assert result.exit_code == 2, result.output
    assert f"The table {table} is not a readable CSV file" in result.output
    assert "Traceback" not in result.output


def test_a_results_folder_under_a_file_is_refused_before_anything_runs(tmp_path: Path):
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")

    result = invoke("--only", "zeus", "--out", str(blocker / "results"))

    assert result.exit_code == 2, result.output
    assert f"--out {blocker / 'results'}: {blocker} is a file, not a folder" in result.output
