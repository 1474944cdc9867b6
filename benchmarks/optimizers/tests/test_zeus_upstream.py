"""Zeus's own simulator, installed from PyPI into a throwaway environment, beside `zeus_bso`.

The first test installs zeus-ml 0.4.0 into the cache folder when it is not there (PyPI must be
reachable; without it the tests skip, saying why). The runner's memoised lookups must give
Zeus's plain simulator's runs, run for run, and its job with seed 50 the one recorded in
`data/zeus_reference_v100_movielens_seed50.json` (the job that ends on 8192).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from discospace.bench.zeus_robust import figures, upstream
from discospace.bench.zeus_sim import Simulator
from discospace.bench.zeus_upstream import ZeusEnvironment, ZeusUnavailableError, job_spec
from discospace.explorer.operators.zeus.policy import ZeusSettings
from discospace.traces.zeus import Workload, ZeusTrace

REFERENCE = Path(__file__).parent / "data" / "zeus_reference_v100_movielens_seed50.json"
MOVIELENS = Workload("movielens-1m", "ncf")


@pytest.fixture(scope="module")
def folder(zeus_folder: Path) -> Path:
    return zeus_folder


@pytest.fixture(scope="module")
def environment() -> ZeusEnvironment:
    env = ZeusEnvironment()
    try:
        env.ensure()
    except ZeusUnavailableError as error:
        pytest.skip(str(error))
    return env


def spec(folder: Path, gpu: str, workload: Workload, seeds: list[int]) -> dict:
    trace = ZeusTrace.load(folder, gpu)
    recurrences = Simulator(trace, workload, ZeusSettings()).recurrences()
    return job_spec(trace, workload, folder, seeds, recurrences, 0.5, 2.0)


@pytest.mark.parametrize(
    ("gpu", "workload"), [("v100", MOVIELENS), ("a40", Workload("squad", "bert_base_uncased"))]
)
def test_the_memoised_runner_gives_zeus_plain_simulator_run_for_run(
    environment, folder, gpu, workload
):
    given = spec(folder, gpu, workload, [3])
    fast = environment.simulate({**given, "fast": True})
    plain = environment.simulate({**given, "fast": False})
    assert fast == plain
    assert fast[0].error is None


def test_seed_50_is_the_recorded_job_of_zeus_own_simulator(environment, folder):
    recorded = json.loads(REFERENCE.read_text())
    [job] = environment.simulate(spec(folder, "v100", MOVIELENS, [50]))
    assert job.choice == (8192, 125)
    assert [run[0] for run in job.runs] == [run[0] for run in recorded["runs"]]
    assert [run[3] for run in job.runs] == [run[6] for run in recorded["runs"]]


def test_the_figures_of_zeus_own_jobs_are_read_like_ours(environment, folder):
    outcomes = upstream(folder, "v100", MOVIELENS, [50, 51])
    told = figures(outcomes)
    assert [o.seed for o in outcomes] == [50, 51]
    assert outcomes[0].final_ratio == pytest.approx(1.20, abs=0.01)
    assert told.median_cumulative > 1.0
    assert outcomes[0].regret == pytest.approx(outcomes[0].cumulative_ratio * 182 - 182, rel=1e-9)
