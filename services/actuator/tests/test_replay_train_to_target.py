"""`train_to_target` over small Zeus-shaped traces, where every figure is computed by hand."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from discospace.actuator.plugin import MeasurementTask
from discospace.actuator.replay import NO_ROW, ReplayActuator, ReplayParameters
from discospace.core import Entity, Experiment
from discospace.core.errors import ExperimentError
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

TRAIN = """dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch
cifar100,shufflenetv2,32,adadelta,1e-1,1,0.6,3
cifar100,shufflenetv2,32,adadelta,1e-1,2,0.6,5
cifar100,shufflenetv2,32,adadelta,1e-1,3,0.6,
cifar100,shufflenetv2,32,adadelta,1e-1,1,0.5,1
"""
POWER = """dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power
cifar100,shufflenetv2,32,adadelta,100,10,80
cifar100,shufflenetv2,32,adadelta,200,6,150
"""
ENTITY = {
    "dataset": "cifar100",
    "network": "shufflenetv2",
    "batch_size": 32,
    "power_limit": 200,
    "gpu": "v100",
}
# Per run at 200 W (6 s/epoch, 150 W, max_power 200 W, 100 max epochs), eta 0.5:
# epochs 3 -> T 18, E 2700, cost 3150; epochs 5 -> T 30, E 4500, cost 5250;
# never -> 100 epochs: T 600, E 90000, cost 105000.
BY_HAND = {
    3: (18.0, 2700.0, 3150.0, 1),
    5: (30.0, 4500.0, 5250.0, 1),
    100: (600.0, 90000.0, 105000.0, 0),
}


@pytest.fixture
def actuator(tmp_path: Path) -> ReplayActuator:
    (tmp_path / "summary_train.csv").write_text(TRAIN)
    (tmp_path / "summary_power_v100.csv").write_text(POWER)
    return ReplayActuator(
        ReplayParameters.model_validate({"zeus": {"folder": str(tmp_path), "gpus": ["v100"]}})
    )


def task(
    actuator: ReplayActuator,
    values: dict[str, Any] | None = None,
    attempt: int = 1,
    request: str = "req-1",
    eta: float | None = None,
) -> MeasurementTask:
    experiment = Experiment.from_spec(actuator.catalog()[0])
    parameterized = experiment.parameterize({} if eta is None else {"eta": eta})
    return MeasurementTask(request, Entity.of(values or ENTITY), parameterized, attempt)


async def values(actuator: ReplayActuator, **where: Any) -> dict[str, Any]:
    outcome = await actuator.measure(task(actuator, **where))
    assert isinstance(outcome, ValidMeasurement)
    return dict(outcome.values)


def test_the_experiment_needs_the_workload_knobs_and_gpu_and_takes_eta(
    actuator: ReplayActuator,
) -> None:
    [spec] = actuator.catalog()

    assert spec.experiment == "train_to_target"
    assert spec.required_properties == ("dataset", "network", "batch_size", "power_limit", "gpu")
    assert spec.optional_properties == {"eta": 0.5}
    assert set(spec.target_properties) == {
        "target_epoch",
        "time_to_accuracy",
        "energy_to_accuracy",
        "average_power",
        "converged",
        "zeus_cost",
    }


async def test_every_run_gives_the_hand_computed_outcome(actuator: ReplayActuator) -> None:
    seen = set()
    for attempt in range(1, 41):
        got = await values(actuator, attempt=attempt)
        time_s, energy, cost, converged = BY_HAND[got["target_epoch"]]
        assert got["time_to_accuracy"] == pytest.approx(time_s)
        assert got["energy_to_accuracy"] == pytest.approx(energy)
        assert got["zeus_cost"] == pytest.approx(cost)
        assert got["converged"] == converged
        assert got["average_power"] == 150.0
        seen.add(got["target_epoch"])

    assert seen == set(BY_HAND)


async def test_a_measurement_is_reproducible_per_request_and_attempt(
    actuator: ReplayActuator,
) -> None:
    runs = [await values(actuator, attempt=a) for a in range(1, 21)]
    again = [await values(actuator, attempt=a) for a in range(1, 21)]
    elsewhere = [await values(actuator, attempt=a, request="req-2") for a in range(1, 21)]

    assert runs == again
    assert elsewhere != runs


async def test_eta_weighs_energy_against_time(actuator: ReplayActuator) -> None:
    energy_only = await values(actuator, eta=1.0)
    time_only = await values(actuator, eta=0.0)

    assert energy_only["zeus_cost"] == pytest.approx(energy_only["energy_to_accuracy"])
    assert time_only["zeus_cost"] == pytest.approx(200.0 * time_only["time_to_accuracy"])


async def test_an_eta_outside_zero_to_one_is_refused(actuator: ReplayActuator) -> None:
    with pytest.raises(ExperimentError, match="eta must be a number in"):
        await actuator.measure(task(actuator, eta=1.5))


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"batch_size": 64}, "batch size 64"),
        ({"power_limit": 150}, "power limit 150 W"),
        ({"network": "resnet50"}, "cifar100/resnet50"),
        ({"gpu": "a40"}, "GPU"),
        ({"batch_size": 32.5}, "whole numbers"),
    ],
)
async def test_a_configuration_outside_the_traces_has_no_recorded_measurement(
    actuator: ReplayActuator, change: dict[str, Any], detail: str
) -> None:
    outcome = await actuator.measure(task(actuator, {**ENTITY, **change}))

    assert isinstance(outcome, InvalidMeasurement)
    assert outcome.reason.startswith(NO_ROW)
    assert detail in outcome.reason


async def test_a_simulated_duration_scales_the_time_to_accuracy(tmp_path: Path) -> None:
    (tmp_path / "summary_train.csv").write_text(TRAIN)
    (tmp_path / "summary_power_v100.csv").write_text(POWER)
    parameters = {"zeus": {"folder": str(tmp_path), "gpus": ["v100"], "duration_scale": 1e-9}}
    actuator = ReplayActuator(ReplayParameters.model_validate(parameters))

    replayed = actuator.replayer.replay(dict(task(actuator).properties), "req-1", 1)

    assert isinstance(replayed.outcome, ValidMeasurement)
    time_s = replayed.outcome.values["time_to_accuracy"]
    assert isinstance(time_s, float)
    assert math.isclose(replayed.duration_s, time_s * 1e-9)
