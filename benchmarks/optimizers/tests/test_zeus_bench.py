"""The Zeus trace benchmark: the simulator's rules by hand, the operator's decisions, the table.

A toy trace in the published CSV format (workload squad/toynet: max 6 epochs, default batch
size 32) keeps the hand-worked figures small; the real traces run when the shared data folder
is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.bench import zeus
from discospace.bench.common import write_result
from discospace.bench.zeus_sim import (
    Simulator,
    run_rng,
    simulate_job,
    simulate_operator,
    simulate_random,
    simulate_zeus,
)
from discospace.cli.main import app
from discospace.explorer.operators.zeus.policy import Plan, ZeusSettings, read_history
from discospace.traces.data import TraceDataMissingError, zeus_data_dir
from discospace.traces.zeus import Workload, ZeusTrace

TOY = Workload("squad", "toynet")
TRAIN = {16: (3, 4, None), 32: (3, 3, 3), 64: (None, 7, None)}
"""Target epochs by batch size and run: None never reached; 7 is past the 6 max epochs."""
POWER = {
    (16, 100): (30.0, 90.0),
    (16, 200): (20.0, 170.0),
    (32, 100): (20.0, 95.0),
    (32, 200): (12.0, 180.0),
    (64, 100): (14.0, 98.0),
    (64, 200): (8.0, 190.0),
}
"""(seconds per epoch, watts) by (batch size, power limit)."""


def write_toy_trace(folder: Path) -> Path:
    train = ["dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch"]
    for batch_size, epochs in TRAIN.items():
        for run, epoch in enumerate(epochs, start=1):
            shown = "" if epoch is None else str(epoch)
            train.append(f"squad,toynet,{batch_size},adamw,1e-5,{run},84.0,{shown}")
    power = ["dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power"]
    for (batch_size, limit), (seconds, watts) in POWER.items():
        power.append(f"squad,toynet,{batch_size},adamw,{limit},{seconds},{watts}")
    (folder / "summary_train.csv").write_text("\n".join(train) + "\n")
    (folder / "summary_power_v100.csv").write_text("\n".join(power) + "\n")
    return folder


@pytest.fixture
def toy_folder(tmp_path: Path) -> Path:
    return write_toy_trace(tmp_path)


@pytest.fixture
def sim(toy_folder: Path) -> Simulator:
    return Simulator(ZeusTrace.load(toy_folder, "v100"), TOY, ZeusSettings())


# Epoch costs at eta 0.5, max power 200 W, batch size 32: 100 W (47.5 + 100) * 20 = 2950;
# 200 W (90 + 100) * 12 = 2280, so profiling keeps 200 W.


def test_a_profiling_run_pays_the_mean_epoch_first_then_trains_at_the_cheapest_limit(sim):
    attempt = sim.run(Plan(32, None, None), run_rng(0, 0))
    assert attempt.power_limit == 200
    assert attempt.profiled
    assert attempt.converged
    # First epoch: mean of (20 s, 1900 J) and (12 s, 2160 J); then 2 epochs at 200 W.
    assert attempt.time_s == pytest.approx(16 + 2 * 12)
    assert attempt.energy_j == pytest.approx(2030 + 2 * 2160)


def test_a_run_stops_before_the_epoch_that_passes_its_cost_limit(sim):
    attempt = sim.run(Plan(32, 200, 5000.0), run_rng(0, 0))
    assert not attempt.converged
    assert attempt.time_s == pytest.approx(2 * 12)
    assert attempt.energy_j == pytest.approx(2 * 2160)


def test_a_run_that_cannot_afford_one_epoch_never_starts(sim):
    attempt = sim.run(Plan(32, 200, 2000.0), run_rng(0, 0))
    assert not attempt.ran
    assert not attempt.converged


def test_a_run_that_never_reaches_the_target_pays_max_epochs(sim):
    attempt = sim.run(Plan(64, 200, None), run_rng(0, 0))
    assert not attempt.converged
    assert attempt.time_s == pytest.approx(6 * 8)
    assert attempt.energy_j == pytest.approx(6 * 8 * 190)


def test_the_job_recurs_two_times_batch_sizes_times_power_limits(sim):
    assert sim.recurrences() == 2 * 3 * 2


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_operator_makes_the_same_decisions_as_the_policy(sim, seed):
    through_operator = simulate_operator(sim, seed, sim.recurrences())
    assert through_operator == simulate_zeus(sim, seed, sim.recurrences())
    assert read_history(through_operator, sim.settings, sim.job).recurrences == sim.recurrences()


def test_the_same_seed_replays_the_same_job(sim):
    assert simulate_operator(sim, 5, 12) == simulate_operator(sim, 5, 12)


def test_random_choice_retries_until_each_recurrence_converged(sim):
    attempts = simulate_random(sim, 0, 12)
    assert sum(a.converged for a in attempts) == 12
    assert {(a.batch_size, a.power_limit) for a in attempts} <= set(POWER)


def test_the_benchmark_finds_the_toy_oracle_and_reports_every_figure(toy_folder):
    result = zeus.run(toy_folder, gpus=("v100",), seeds=(0, 1, 2))
    [workload] = result.details["workloads"]
    assert (workload["oracle_batch_size"], workload["oracle_power_limit"]) == (32, 200)
    assert workload["oracle_expected_cost"] == pytest.approx(3 * 2280)
    assert [r["final_ratio"] for r in workload["zeus"]] == [1.0, 1.0, 1.0]
    assert all(r["cumulative_ratio"] >= 1.0 for r in workload["zeus"])
    assert len(result.tables[0].rows) == 1
    assert len(result.tables[0].rows[0]) == len(zeus.COLUMNS)


def test_the_result_is_written_as_json(toy_folder, tmp_path):
    result = zeus.run(toy_folder, gpus=("v100",), seeds=(0,))
    path = write_result(result, tmp_path / "results")
    assert path == tmp_path / "results" / "zeus.json"
    stored = json.loads(path.read_text())
    assert stored["settings"]["eta"] == 0.5
    assert stored["details"]["workloads"][0]["workload"] == "squad/toynet"


def test_the_command_runs_the_zeus_benchmark_on_the_given_folder(toy_folder, tmp_path):
    out = tmp_path / "out"
    args = ["bench", "optimizers", "--only", "zeus", "--gpu", "v100"]
    result = CliRunner().invoke(app, [*args, "--zeus-data", str(toy_folder), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "squad/toynet" in result.output
    assert (out / "zeus.json").is_file()


def test_the_command_says_the_folder_given_holds_no_trace(tmp_path):
    args = ["bench", "optimizers", "--only", "zeus", "--zeus-data", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.output == (
        f"error: {tmp_path} is neither a zeus-nsdi23-trace trace folder nor a folder that holds"
        " zeus-nsdi23-trace/; give one of those.\n"
    )


def test_the_command_refuses_an_unknown_benchmark():
    result = CliRunner().invoke(app, ["bench", "optimizers", "--only", "nope"])
    assert result.exit_code == 2
    assert "unknown benchmark nope" in result.output


def _real_traces() -> Path:
    try:
        return zeus_data_dir()
    except TraceDataMissingError as error:
        pytest.skip(f"the Zeus traces are not here: {error}")


def test_on_the_real_traces_the_median_choice_and_cumulative_cost_meet_the_targets():
    result = zeus.run(_real_traces())
    for workload in result.details["workloads"]:
        finals = sorted(r["final_ratio"] for r in workload["zeus"])
        cumulative = sorted(r["cumulative_ratio"] for r in workload["zeus"])
        name = f"{workload['gpu']} {workload['workload']}"
        assert (finals[4] + finals[5]) / 2 <= zeus.FINAL_TARGET, name
        assert (cumulative[4] + cumulative[5]) / 2 <= zeus.CUMULATIVE_TARGET, name


def test_a_run_draw_can_pick_each_training_run_from_the_requested_point(sim):
    seen = []

    def draw(point, runs_before):
        seen.append((point["recurrence"], runs_before))
        return run_rng(0, runs_before)

    assert simulate_operator(sim, 0, 12, draw) == simulate_operator(sim, 0, 12)
    assert all(recurrence == before for recurrence, before in seen)


def test_a_job_after_one_on_another_gpu_skips_pruning_and_costs_less():
    """Real traces: an A40 movielens job with a finished V100 job of the same workload in the
    store (its results as `store_elsewhere`) starts at the size cheapest on V100, never runs a
    size that failed there, and costs less than the cold A40 job of the same seed."""
    folder = _real_traces()
    workload = Workload("movielens-1m", "ncf")
    v100 = Simulator(ZeusTrace.load(folder, "v100"), workload, ZeusSettings())
    a40 = Simulator(ZeusTrace.load(folder, "a40"), workload, ZeusSettings())
    before = simulate_job(v100, 0, v100.recurrences())
    cold = simulate_job(a40, 0, a40.recurrences())
    warm = simulate_job(a40, 0, a40.recurrences(), elsewhere=before.results)
    failed_there = {a.batch_size for a in before.attempts if a.ran} - {
        a.batch_size for a in before.attempts if a.converged
    }
    cost = lambda job: sum(read_history(job.attempts, a40.settings, a40.job).costs)  # noqa: E731
    assert sum(a.converged for a in warm.attempts) == a40.recurrences()
    assert warm.attempts[0].batch_size == 16384
    assert not failed_there & {a.batch_size for a in warm.attempts}
    assert cost(warm) < cost(cold)
    assert warm.choice is not None
