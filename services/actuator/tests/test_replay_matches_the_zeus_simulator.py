"""The replay's `train_to_target` costs a run as the Zeus simulator does.

`zeus_bso` is benchmarked in process (`discospace.bench.zeus_sim.Simulator.run`, whose runs are
`discospace.traces.zeus_rules.simulated_run`: a run planned as the Zeus optimizer plans one,
replayed as Zeus's own simulator does) and run through the services on the replay actuator; for
the same training run drawn (the replay's generator for the request and attempt), both must give
the same time, energy, convergence and trained power limit under every run control.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from discospace.actuator.plugin import MeasurementTask
from discospace.actuator.plugins import load_actuator
from discospace.actuator.replay import ReplayActuator, ReplayParameters
from discospace.actuator.replay.seeding import generator
from discospace.core import Entity, Experiment
from discospace.core.measurement import ValidMeasurement
from discospace.traces.data import TraceDataMissingError, data_dir
from discospace.traces.zeus import Workload, ZeusTrace
from discospace.traces.zeus_rules import ControlledRun, simulated_run

REPO = Path(__file__).resolve().parents[3]
TRAIN = """dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch
sentiment140,bert,16,adamw,1e-5,1,0.84,2
sentiment140,bert,16,adamw,1e-5,2,0.84,4.5
sentiment140,bert,16,adamw,1e-5,3,0.84,7
sentiment140,bert,16,adamw,1e-5,4,0.84,
sentiment140,bert,32,adamw,1e-5,1,0.84,3
sentiment140,bert,32,adamw,1e-5,2,0.84,11
sentiment140,bert,32,adamw,1e-5,3,0.84,6
"""
POWER = """dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power
sentiment140,bert,16,adamw,100,30,95
sentiment140,bert,16,adamw,150,21,140
sentiment140,bert,16,adamw,200,19,170
sentiment140,bert,32,adamw,100,22,98
sentiment140,bert,32,adamw,150,16,145
sentiment140,bert,32,adamw,200,13,190
"""
WORKLOAD = Workload("sentiment140", "bert")
# Epochs of 13 to 30 s at up to 200 W cost about 2000 to 4500 at eta 0.5, max power 200 W:
# 9000 stops most runs after two to four epochs, 1500 leaves no epoch.
CONTROLS = [
    {},
    {"cost_limit": 9000.0},
    {"cost_limit": 1500.0},
    {"profile_power": 1},
    {"profile_power": 1, "cost_limit": 9000.0},
    {"max_epochs": 4},
    {"max_epochs": 5, "profile_power": 1, "cost_limit": 16000.0},
]
SEED = 0
ETA = 0.5


def simulated(
    trace: ZeusTrace,
    workload: Workload,
    entity: dict[str, Any],
    controls: dict[str, Any],
    request: str,
    attempt: int,
) -> ControlledRun:
    """The simulator's run for the training run the replay draws for (request, attempt), as
    `zeus_bso` plans it: the entity's limit, or none (profile them all) under `profile_power`."""
    rng = generator(SEED, "train_to_target", request, attempt)
    batch_size = int(entity["batch_size"])
    target_epoch = trace.sample_run(workload, batch_size, rng)
    limit = None if controls.get("profile_power") else int(entity["power_limit"])
    cost_limit = controls.get("cost_limit")
    max_epochs = int(controls["max_epochs"]) if "max_epochs" in controls else None
    return simulated_run(
        trace, workload, batch_size, limit, cost_limit, target_epoch, ETA, max_epochs
    )


async def replayed(
    actuator: ReplayActuator, entity: dict[str, Any], controls: dict[str, Any], request: str
) -> dict[str, Any]:
    experiment = Experiment.from_spec(actuator.catalog()[0]).parameterize({})
    task = MeasurementTask(request, Entity.of(entity), experiment, 1, controls)
    outcome = await actuator.measure(task)
    assert isinstance(outcome, ValidMeasurement)
    return dict(outcome.values)


def assert_same_run(values: dict[str, Any], run: ControlledRun) -> None:
    assert values["time_to_accuracy"] == run.time_s
    assert values["energy_to_accuracy"] == run.energy_j
    assert values["converged"] == int(run.converged)
    assert values["trained_power_limit"] == run.power_limit


@pytest.fixture
def small(tmp_path: Path) -> tuple[ReplayActuator, ZeusTrace]:
    (tmp_path / "summary_train.csv").write_text(TRAIN)
    (tmp_path / "summary_power_v100.csv").write_text(POWER)
    parameters = {"zeus": {"folder": str(tmp_path), "gpus": ["v100"]}, "seed": SEED}
    actuator = ReplayActuator(ReplayParameters.model_validate(parameters))
    trace = ZeusTrace.from_frames(
        pd.read_csv(io.StringIO(TRAIN)), pd.read_csv(io.StringIO(POWER)), "v100"
    )
    return actuator, trace


@pytest.mark.parametrize("controls", CONTROLS, ids=lambda c: ",".join(c) or "none")
async def test_the_replay_gives_the_simulators_run_under_each_control(
    small: tuple[ReplayActuator, ZeusTrace], controls: dict[str, Any]
) -> None:
    actuator, trace = small
    outcomes = set()
    for batch_size in (16, 32):
        for power_limit in (100, 200):
            entity = {
                "dataset": "sentiment140",
                "network": "bert",
                "batch_size": batch_size,
                "power_limit": power_limit,
                "gpu": "v100",
            }
            for number in range(12):
                request = f"req-{batch_size}-{power_limit}-{number}"
                run = simulated(trace, WORKLOAD, entity, controls, request, 1)
                assert_same_run(await replayed(actuator, entity, controls, request), run)
                outcomes.add((run.converged, run.started))

    expected = {(False, False)} if controls.get("cost_limit") == 1500.0 else {(True, True)}
    assert expected <= outcomes  # the runs compared include converged ones, or never-started ones


@pytest.fixture(scope="module")
def v100() -> tuple[Any, ZeusTrace]:
    try:
        folder = data_dir()
    except TraceDataMissingError as error:
        pytest.skip(str(error))
    config = REPO / "examples" / "replay" / "zeus-v100.yaml"
    actuator = load_actuator("replay", {"config": str(config)})
    return actuator, ZeusTrace.load(folder, "v100")


async def test_on_the_real_v100_traces_the_replay_gives_the_simulators_runs(
    v100: tuple[Any, ZeusTrace],
) -> None:
    actuator, trace = v100
    rng = np.random.default_rng(7)
    stopped = 0
    for workload in trace.workloads:
        job = trace.job(workload)
        for batch_size in job.batch_sizes:
            highest = max(job.power_limits)
            half = trace.outcome(workload, batch_size, highest, job.max_epochs / 2).cost
            for controls in ({"profile_power": 1, "cost_limit": half}, {"cost_limit": half}, {}):
                entity = {
                    "dataset": workload.dataset,
                    "network": workload.network,
                    "batch_size": batch_size,
                    "power_limit": int(rng.choice(job.power_limits)),
                    "gpu_model": "v100",
                }
                request = f"req-{workload}-{batch_size}-{len(controls)}"
                run = simulated(trace, workload, entity, controls, request, 1)
                assert_same_run(await replayed(actuator, entity, controls, request), run)
                stopped += "cost_limit" in controls and not run.converged

    assert stopped > 0
