"""The Zeus simulator on small hand-made tables, where every figure is computed by hand."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from discospace.traces.data import TraceDataMissingError
from discospace.traces.zeus import (
    RunOutcome,
    UnknownConfigurationError,
    Workload,
    ZeusTrace,
    ZeusTraceError,
    available_gpus,
    cost,
)

CIFAR = Workload("cifar100", "shufflenetv2")
TRAIN_HEADER = "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch"
POWER_HEADER = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"


def _train_rows() -> list[str]:
    rows = []
    # bs 32: runs reach 0.6 at epochs 3 and 5, run 3 never (empty); bs 64: 2, and 150 > 100.
    for run, epoch in ((1, "3"), (2, "5"), (3, "")):
        rows.append(f"cifar100,shufflenetv2,32,adadelta,1e-1,{run},0.6,{epoch}")
        rows.append(f"cifar100,shufflenetv2,32,adadelta,1e-1,{run},0.5,1")
    for run, epoch in ((1, "2"), (2, "150")):
        rows.append(f"cifar100,shufflenetv2,64,adadelta,1e-1,{run},0.6,{epoch}")
    rows.append("cifar100,shufflenetv2,128,adadelta,1e-1,1,0.6,nan")  # no power row: left out
    return rows


def _power_rows() -> list[str]:
    return [
        "cifar100,shufflenetv2,16,adadelta,100,12,70",  # no train run: left out
        "cifar100,shufflenetv2,32,adadelta,100,10,80",
        "cifar100,shufflenetv2,32,adadelta,200,6,150",
        "cifar100,shufflenetv2,64,adadelta,100,8,90",
        "cifar100,shufflenetv2,64,adadelta,200,5,180",
        "cifar100,shufflenetv2,64,adam,200,1,1",  # another optimizer: ignored
    ]


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    (tmp_path / "summary_train.csv").write_text("\n".join([TRAIN_HEADER, *_train_rows(), ""]))
    (tmp_path / "summary_power_v100.csv").write_text("\n".join([POWER_HEADER, *_power_rows(), ""]))
    return tmp_path


@pytest.fixture
def trace(trace_dir: Path) -> ZeusTrace:
    return ZeusTrace.load(trace_dir, "v100")


def test_a_job_keeps_batch_sizes_present_in_both_tables(trace: ZeusTrace) -> None:
    job = trace.job(CIFAR)
    assert trace.workloads == (CIFAR,)
    assert job.batch_sizes == (32, 64)
    assert job.power_limits == (100, 200)
    assert (job.target_metric, job.max_epochs, job.optimizer) == (0.6, 100, "adadelta")


def test_the_default_batch_size_is_capped_by_the_power_trace(trace: ZeusTrace) -> None:
    assert trace.job(("cifar100", "shufflenetv2")).default_batch_size == 64


def test_max_power_is_the_highest_power_limit_of_the_gpu(trace: ZeusTrace) -> None:
    assert trace.max_power(CIFAR) == 200.0


def test_runs_list_target_epochs_by_seed_with_nan_for_runs_that_never_converge(
    trace: ZeusTrace,
) -> None:
    runs = trace.runs(CIFAR, 32)
    assert runs[:2] == (3.0, 5.0)
    assert math.isnan(runs[2])
    assert trace.runs(CIFAR, 64) == (2.0, 150.0)


def test_power_rows_give_time_per_epoch_and_average_power(trace: ZeusTrace) -> None:
    assert trace.time_per_epoch(CIFAR, 32, 200) == 6.0
    assert trace.average_power(CIFAR, 64, 100) == 90.0


def test_cost_weighs_energy_against_time_at_max_power() -> None:
    assert cost(0.5, 2400.0, 30.0, 200.0) == 4200.0
    assert cost(1.0, 2400.0, 30.0, 200.0) == 2400.0
    assert cost(0.0, 2400.0, 30.0, 200.0) == 6000.0
    with pytest.raises(ZeusTraceError, match="eta"):
        cost(1.5, 1.0, 1.0, 1.0)


def test_a_converged_run_pays_for_its_target_epochs(trace: ZeusTrace) -> None:
    outcome = trace.outcome(CIFAR, 32, 100, 3.0, eta=0.5)
    assert outcome == RunOutcome(3.0, True, 3.0, 30.0, 2400.0, 80.0, 4200.0)


def test_a_run_that_never_converges_pays_for_max_epochs_and_fails(trace: ZeusTrace) -> None:
    outcome = trace.outcome(CIFAR, 32, 100, math.nan, eta=0.5)
    assert not outcome.converged
    assert (outcome.epochs, outcome.time_s, outcome.energy_j) == (100.0, 1000.0, 80000.0)
    assert outcome.cost == 140000.0


def test_a_run_converging_after_max_epochs_fails(trace: ZeusTrace) -> None:
    late = trace.outcome(CIFAR, 64, 200, 150.0)
    assert not late.converged
    assert late.epochs == 100.0
    assert trace.outcome(CIFAR, 64, 200, 150.0, max_epochs=200).converged


def test_expected_cost_is_mean_attempt_cost_over_the_chance_of_success(trace: ZeusTrace) -> None:
    # (4200 + 7000 + 140000) / 3 / (2/3)
    assert trace.expected_cost(CIFAR, 32, 100, eta=0.5) == pytest.approx(75600.0)
    # (1900 + 95000) / 2 / (1/2)
    assert trace.expected_cost(CIFAR, 64, 200, eta=0.5) == pytest.approx(96900.0)
    # with 200 epochs allowed the second run converges: (1900 + 142500) / 2
    assert trace.expected_cost(CIFAR, 64, 200, 0.5, max_epochs=200) == pytest.approx(72200.0)


def test_expected_cost_is_infinite_when_no_run_converges(trace: ZeusTrace) -> None:
    assert trace.expected_cost(CIFAR, 64, 100, 0.5, max_epochs=1) == math.inf


def test_the_oracle_picks_the_cheapest_batch_size_and_power_limit(trace: ZeusTrace) -> None:
    choice = trace.oracle(CIFAR, eta=0.5)
    assert (choice.batch_size, choice.power_limit) == (32, 200)
    assert choice.expected_cost == pytest.approx(56700.0)


def test_sampling_a_run_is_reproducible_by_seed_and_covers_every_run(trace: ZeusTrace) -> None:
    first = [trace.sample_run(CIFAR, 64, np.random.default_rng(seed)) for seed in range(40)]
    again = [trace.sample_run(CIFAR, 64, np.random.default_rng(seed)) for seed in range(40)]
    assert first == again
    assert set(first) == {2.0, 150.0}


def test_simulate_costs_the_run_it_draws(trace: ZeusTrace) -> None:
    outcome = trace.simulate(CIFAR, 32, 200, np.random.default_rng(3), eta=0.25)
    drawn = trace.sample_run(CIFAR, 32, np.random.default_rng(3))
    assert outcome == trace.outcome(CIFAR, 32, 200, drawn, eta=0.25)


def test_unknown_knobs_are_refused_with_one_sentence(trace: ZeusTrace) -> None:
    with pytest.raises(UnknownConfigurationError, match="batch size 16 and power limit 100 W"):
        trace.time_per_epoch(CIFAR, 16, 100)
    with pytest.raises(UnknownConfigurationError, match="no run of cifar100/shufflenetv2"):
        trace.runs(CIFAR, 128)
    with pytest.raises(UnknownConfigurationError, match="no workload imagenet/resnet50"):
        trace.job(("imagenet", "resnet50"))


def test_a_gpu_without_a_power_trace_is_refused_naming_the_traces_there(trace_dir: Path) -> None:
    with pytest.raises(TraceDataMissingError, match=r"GPU 'h100'.*power traces there: v100\)\."):
        ZeusTrace.load(trace_dir, "h100")


def test_a_gpu_of_any_name_loads_when_its_power_file_exists(trace_dir: Path) -> None:
    (trace_dir / "summary_power_l4.csv").write_text("\n".join([POWER_HEADER, *_power_rows(), ""]))

    trace = ZeusTrace.load(trace_dir, "l4")

    assert (trace.gpu, trace.workloads) == ("l4", (CIFAR,))
    assert available_gpus(trace_dir) == ("v100", "l4")


def test_a_gpu_name_that_is_not_a_file_name_is_refused(trace_dir: Path) -> None:
    with pytest.raises(ZeusTraceError, match=r"'\.\./v100' is not a GPU name"):
        ZeusTrace.load(trace_dir, "../v100")


def test_a_batch_size_lacking_a_power_limit_offers_only_the_limits_it_has(
    trace_dir: Path,
) -> None:
    rows = [r for r in _power_rows() if not r.startswith("cifar100,shufflenetv2,64,adadelta,200")]
    (trace_dir / "summary_power_v100.csv").write_text("\n".join([POWER_HEADER, *rows, ""]))

    trace = ZeusTrace.load(trace_dir, "v100")

    assert trace.job(CIFAR).power_limits == (100, 200)
    assert trace.power_limits_at(CIFAR, 32) == (100, 200)
    assert trace.power_limits_at(CIFAR, 64) == (100,)
    assert trace.configurations(CIFAR) == ((32, 100), (32, 200), (64, 100))
    assert trace.unavailable(CIFAR) == ((64, 200),)
    assert trace.job(CIFAR).default_batch_size == 64
    assert (trace.oracle(CIFAR).batch_size, trace.oracle(CIFAR).power_limit) == (32, 200)


def test_the_default_batch_size_is_one_the_job_has(tmp_path: Path) -> None:
    # The paper's default (1024) lies between the trace's batch sizes 512 and 2048.
    train = [f"cifar100,shufflenetv2,{b},adadelta,1e-1,1,0.6,3" for b in (512, 2048)]
    power = [f"cifar100,shufflenetv2,{b},adadelta,100,10,80" for b in (512, 2048)]
    (tmp_path / "summary_train.csv").write_text("\n".join([TRAIN_HEADER, *train, ""]))
    (tmp_path / "summary_power_v100.csv").write_text("\n".join([POWER_HEADER, *power, ""]))

    assert ZeusTrace.load(tmp_path, "v100").job(CIFAR).default_batch_size == 512


def test_a_missing_power_file_names_the_path(trace_dir: Path) -> None:
    with pytest.raises(TraceDataMissingError, match=r"summary_power_a40\.csv"):
        ZeusTrace.load(trace_dir, "a40")


def test_frames_load_the_same_as_files(trace_dir: Path, trace: ZeusTrace) -> None:
    train = pd.read_csv(trace_dir / "summary_train.csv")
    power = pd.read_csv(trace_dir / "summary_power_v100.csv")
    from_frames = ZeusTrace.from_frames(train, power, "v100")
    assert from_frames.job(CIFAR) == trace.job(CIFAR)
