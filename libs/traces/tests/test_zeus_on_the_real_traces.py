"""The Zeus simulator on the published NSDI'23 traces (skipped when ../shared/data is absent)."""

import csv
import math
from pathlib import Path

import pytest

from discospace.traces.data import zeus_data_dir
from discospace.traces.zeus import PAPER_JOBS, Workload, ZeusTrace

WORKLOADS = {
    Workload("cifar100", "shufflenetv2"),
    Workload("imagenet", "resnet50"),
    Workload("librispeech", "deepspeech2"),
    Workload("movielens-1m", "ncf"),
    Workload("squad", "bert_base_uncased"),
    Workload("sentiment140", "bert_base_uncased"),
}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def v100(shared_data: Path) -> ZeusTrace:
    return ZeusTrace.load(shared_data, "v100")


@pytest.fixture(scope="module")
def a40(shared_data: Path) -> ZeusTrace:
    return ZeusTrace.load(shared_data, "a40")


def test_both_gpus_cover_the_six_workloads_with_the_paper_defaults(
    v100: ZeusTrace, a40: ZeusTrace
) -> None:
    for trace, max_power in ((v100, 250.0), (a40, 300.0)):
        assert set(trace.workloads) == WORKLOADS
        for workload in trace.workloads:
            job = trace.job(workload)
            paper = PAPER_JOBS[workload.dataset]
            assert (job.target_metric, job.max_epochs) == (paper.target_metric, paper.max_epochs)
            assert job.default_batch_size in job.batch_sizes
            assert job.max_power == max_power


def test_batch_sizes_are_those_in_both_tables(shared_data: Path, a40: ZeusTrace) -> None:
    folder = zeus_data_dir(shared_data)
    train = {
        int(r["batch_size"])
        for r in _rows(folder / "summary_train.csv")
        if r["dataset"] == "librispeech" and float(r["target_metric"]) == 40.0
    }
    power = {
        int(r["batch_size"])
        for r in _rows(folder / "summary_power_a40.csv")
        if r["dataset"] == "librispeech"
    }
    assert a40.batch_sizes(("librispeech", "deepspeech2")) == tuple(sorted(train & power))


def test_one_run_matches_the_hand_computation_from_the_csv_rows(
    shared_data: Path, v100: ZeusTrace
) -> None:
    folder = zeus_data_dir(shared_data)
    epochs = {
        int(r["run"]): r["target_epoch"]
        for r in _rows(folder / "summary_train.csv")
        if r["dataset"] == "cifar100" and r["batch_size"] == "1024" and r["target_metric"] == "0.6"
    }
    (power,) = [
        r
        for r in _rows(folder / "summary_power_v100.csv")
        if r["dataset"] == "cifar100"
        and r["batch_size"] == "1024"
        and r["optimizer"] == "adadelta"
        and r["power_limit"] == "175"
    ]
    target = float(epochs[1])
    time_s = target * float(power["time_per_epoch"])
    energy = time_s * float(power["average_power"])
    outcome = v100.outcome(("cifar100", "shufflenetv2"), 1024, 175, target, eta=0.3)
    assert outcome.converged
    assert outcome.time_s == pytest.approx(time_s)
    assert outcome.energy_j == pytest.approx(energy)
    assert outcome.cost == pytest.approx(0.3 * energy + 0.7 * 250.0 * time_s)
    assert len(v100.runs(("cifar100", "shufflenetv2"), 1024)) == len(epochs)


def test_runs_that_never_reach_the_target_fail_at_max_epochs(v100: ZeusTrace) -> None:
    imagenet = ("imagenet", "resnet50")
    assert all(math.isnan(e) for e in v100.runs(imagenet, 64))
    assert v100.expected_cost(imagenet, 64, 250) == math.inf
    failed = v100.outcome(imagenet, 64, 250, v100.runs(imagenet, 64)[0])
    assert not failed.converged
    assert failed.epochs == 100.0


def test_the_oracle_is_no_worse_than_the_default_configuration(
    v100: ZeusTrace, a40: ZeusTrace
) -> None:
    for trace in (v100, a40):
        for workload in trace.workloads:
            job = trace.job(workload)
            best = trace.oracle(workload, eta=0.5)
            default = trace.expected_cost(
                workload, job.default_batch_size, max(job.power_limits), 0.5
            )
            assert math.isfinite(best.expected_cost)
            assert best.expected_cost <= default
