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
cifar100,shufflenetv2,32,adadelta,100,7,80
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
    inputs: dict[str, Any] | None = None,
    parameterization: dict[str, Any] | None = None,
) -> MeasurementTask:
    experiment = Experiment.from_spec(actuator.catalog()[0])
    chosen = {**(parameterization or {}), **({} if eta is None else {"eta": eta})}
    parameterized = experiment.parameterize(chosen)
    entity = Entity.of(values or ENTITY)
    return MeasurementTask(request, entity, parameterized, attempt, inputs or {})


async def values(actuator: ReplayActuator, **where: Any) -> dict[str, Any]:
    outcome = await actuator.measure(task(actuator, **where))
    assert isinstance(outcome, ValidMeasurement)
    return dict(outcome.values)


def test_the_experiment_needs_the_workload_knobs_and_gpu_and_takes_eta_and_run_controls(
    actuator: ReplayActuator,
) -> None:
    [spec] = actuator.catalog()

    assert spec.experiment == "train_to_target"
    assert spec.required_properties == ("dataset", "network", "batch_size", "power_limit", "gpu")
    assert spec.optional_properties == {
        "eta": 0.5,
        "cost_limit": 0,
        "profile_power": 0,
        "max_epochs": 0,
        "max_power": 0,
    }
    assert set(spec.target_properties) == {
        "target_epoch",
        "time_to_accuracy",
        "energy_to_accuracy",
        "average_power",
        "converged",
        "zeus_cost",
        "trained_power_limit",
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
        assert got["trained_power_limit"] == 200
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


# Run controls. Epoch costs at eta 0.5, max power 200 W: (0.5 * W + 100) * s
#   100 W: (40 + 100) * 7 = 980 (energy 560);  200 W: (75 + 100) * 6 = 1050 (energy 900).
# The training run drawn reaches the target at epoch 3, 5 or never (the job allows 100).


async def runs_by_draw(actuator: ReplayActuator, inputs: dict[str, Any], **where: Any) -> dict:
    """(target_epoch, converged) -> the values of every run drawn with those, over 40 draws."""
    seen: dict[tuple[Any, Any], dict[str, Any]] = {}
    for attempt in range(1, 41):
        got = await values(actuator, attempt=attempt, inputs=inputs, **where)
        seen[(got["target_epoch"], got["converged"])] = got
    return seen


def assert_run(got: dict[str, Any], time_s: float, energy: float, cost: float) -> None:
    assert got["time_to_accuracy"] == pytest.approx(time_s)
    assert got["energy_to_accuracy"] == pytest.approx(energy)
    assert got["zeus_cost"] == pytest.approx(cost)


async def test_a_cost_limit_stops_a_run_before_the_epoch_that_would_pass_it(
    actuator: ReplayActuator,
) -> None:
    # 4000 affords 3 epochs of 1050 (3150); the 4th would cost 4200.
    seen = await runs_by_draw(actuator, {"cost_limit": 4000.0})

    assert set(seen) == {(3, 1), (3, 0)}  # target 3 converges; 5 and never stop at 3
    for got in seen.values():
        assert_run(got, 18.0, 2700.0, 3150.0)
        assert got["trained_power_limit"] == 200


async def test_a_run_that_cannot_afford_one_epoch_never_starts(actuator: ReplayActuator) -> None:
    seen = await runs_by_draw(actuator, {"cost_limit": 1000.0})

    assert set(seen) == {(0, 0)}
    assert_run(seen[(0, 0)], 0.0, 0.0, 0.0)


async def test_max_epochs_caps_a_run_that_has_not_converged(actuator: ReplayActuator) -> None:
    # 4 epochs at 200 W: T 24, E 3600, cost 1800 + 100 * 24 = 4200.
    seen = await runs_by_draw(actuator, {"max_epochs": 4})

    assert set(seen) == {(3, 1), (4, 0)}
    assert_run(seen[(3, 1)], 18.0, 2700.0, 3150.0)
    assert_run(seen[(4, 0)], 24.0, 3600.0, 4200.0)


async def test_max_epochs_may_come_from_the_measurement_space_parameterization(
    actuator: ReplayActuator,
) -> None:
    seen = await runs_by_draw(actuator, {}, parameterization={"max_epochs": 4})

    assert set(seen) == {(3, 1), (4, 0)}


async def test_profiling_splits_the_first_epoch_and_trains_the_rest_at_the_cheapest_limit(
    actuator: ReplayActuator,
) -> None:
    # Profiling epoch: T (7 + 6) / 2 = 6.5, E (560 + 900) / 2 = 730; then 100 W (980 < 1050).
    # Target 3: T 2 * 7 + 6.5 = 20.5, E 2 * 560 + 730 = 1850, cost 925 + 2050 = 2975.
    # Target 5: T 34.5, E 2970, cost 4935.  Never: T 699.5, E 56170, cost 98035.
    seen = await runs_by_draw(actuator, {"profile_power": 1})

    assert set(seen) == {(3, 1), (5, 1), (100, 0)}
    assert_run(seen[(3, 1)], 20.5, 1850.0, 2975.0)
    assert_run(seen[(5, 1)], 34.5, 2970.0, 4935.0)
    assert_run(seen[(100, 0)], 699.5, 56170.0, 98035.0)
    for got in seen.values():
        assert got["trained_power_limit"] == 100
        assert got["average_power"] == pytest.approx(
            got["energy_to_accuracy"] / got["time_to_accuracy"]
        )


async def test_a_profiled_run_is_stopped_at_the_cost_of_the_limit_it_trains_at(
    actuator: ReplayActuator,
) -> None:
    # 3000 affords 3 epochs of 980 at 100 W (2940); the run converging at 3 costs 2975.
    seen = await runs_by_draw(actuator, {"profile_power": 1, "cost_limit": 3000})

    assert set(seen) == {(3, 1), (3, 0)}
    for got in seen.values():
        assert_run(got, 20.5, 1850.0, 2975.0)
        assert got["trained_power_limit"] == 100


async def test_the_controls_change_the_cost_not_the_training_run_drawn(
    actuator: ReplayActuator,
) -> None:
    for attempt in range(1, 21):
        plain = await values(actuator, attempt=attempt)
        profiled = await values(actuator, attempt=attempt, inputs={"profile_power": 1})
        assert profiled["target_epoch"] == plain["target_epoch"]
        assert profiled["converged"] == plain["converged"]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"cost_limit": -1}, "cost_limit must be 0"),
        ({"cost_limit": "a lot"}, "cost_limit must be a finite number"),
        ({"profile_power": 2}, "profile_power must be 0 or 1"),
        ({"max_epochs": 2.5}, "max_epochs must be a whole number"),
    ],
)
async def test_a_run_control_that_cannot_be_one_is_refused_with_its_name(
    actuator: ReplayActuator, inputs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExperimentError, match=message):
        await actuator.measure(task(actuator, inputs=inputs))


async def test_a_profiled_run_must_still_start_at_a_limit_the_traces_hold(
    actuator: ReplayActuator,
) -> None:
    entity = {**ENTITY, "power_limit": 150}
    outcome = await actuator.measure(task(actuator, entity, inputs={"profile_power": 1}))

    assert isinstance(outcome, InvalidMeasurement)
    assert "power limit 150 W" in outcome.reason


async def test_a_profiled_run_asked_above_every_limit_held_at_its_size_starts_at_the_highest(
    tmp_path: Path,
) -> None:
    """The operator asks a profiled run at the space's highest limit: a size whose trace lacks
    that row was invalid (pruning ended there, and the limit was kept for the size), where
    Zeus's simulator profiles from the highest limit the trace holds at the size."""
    (tmp_path / "summary_train.csv").write_text(TRAIN)
    (tmp_path / "summary_power_v100.csv").write_text(
        POWER + "cifar100,shufflenetv2,64,adadelta,250,5,190\n"  # 250 W held at 64 only
    )
    parameters = {"zeus": {"folder": str(tmp_path), "gpus": ["v100"]}}
    actuator = ReplayActuator(ReplayParameters.model_validate(parameters))
    entity = {**ENTITY, "power_limit": 250}

    outcome = await actuator.measure(task(actuator, entity, inputs={"profile_power": 1}))

    assert isinstance(outcome, ValidMeasurement)
    assert outcome.values["trained_power_limit"] in (100, 200)
