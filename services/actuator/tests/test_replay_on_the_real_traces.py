"""The replay examples on the published tables (skipped when ../shared/data is absent)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from discospace.actuator.plugin import MeasurementTask
from discospace.actuator.plugins import load_actuator
from discospace.actuator.replay import NO_ROW, ReplayTable, load_config
from discospace.core import Entity, Experiment, ExperimentCatalog
from discospace.core.loading import load_discovery_space
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement
from discospace.traces.data import TraceDataMissingError, data_dir

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "replay"
COLUMNS = {
    "model_name": "model_name_or_path",
    "number_gpus": "num_gpus",
    "per_device_batch_size": "per_device_train_batch_size",
    "framework_config": "framework_config",
    "peft_method": "peft_method",
}


@pytest.fixture(scope="module")
def shared_data() -> Path:
    try:
        return data_dir()
    except TraceDataMissingError as error:
        pytest.skip(str(error))


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def key_of(row: dict[str, str]) -> tuple[str | int, ...]:
    """A CSV row's configuration as the space names it (empty PEFT method: 'none')."""
    values: dict[str, str | int] = {name: row[column] for name, column in COLUMNS.items()}
    values["peft_method"] = values["peft_method"] or "none"
    for name in ("number_gpus", "per_device_batch_size"):
        values[name] = int(values[name])
    return tuple(values[name] for name in COLUMNS)


def test_the_fms_space_is_built_from_the_distinct_values_of_the_table(shared_data: Path) -> None:
    rows = csv_rows(shared_data / "fms-acceleration-a100" / "a100_80gb.csv")
    space = load_discovery_space(EXAMPLES / "fms-a100-space.yaml").entity_space

    for position, name in enumerate(COLUMNS):
        distinct = {key_of(row)[position] for row in rows}
        values = set(space.get_property(name).domain.values)  # type: ignore[attr-defined]
        assert values == distinct, name


async def test_replay_measures_the_whole_fms_space_as_the_table_records_it(
    shared_data: Path,
) -> None:
    rows = csv_rows(shared_data / "fms-acceleration-a100" / "a100_80gb.csv")
    recorded = {key_of(row): row for row in rows}
    config = load_config(EXAMPLES / "fms-a100.yaml")
    assert config.table is not None
    table = ReplayTable.load(config.table.model_copy(update={"duration": None}), EXAMPLES)
    space = load_discovery_space(EXAMPLES / "fms-a100-space.yaml").entity_space

    outcomes: Counter[str] = Counter()
    for entity in space:
        replayed = table.replay(entity, f"req-{entity.id}", 1)
        row = recorded.get(tuple(entity[name] for name in COLUMNS))
        if isinstance(replayed.outcome, ValidMeasurement):
            assert row is not None
            values = replayed.outcome.values
            assert values["train_tokens_per_second"] == float(row["train_tokens_per_second"])
            assert values["gpu_memory_reserved_mib"] == int(row["mem_nvidia_mem_reserved"])
        outcomes[getattr(replayed.outcome, "reason", "valid")] += 1

    assert outcomes == {
        "valid": sum(1 for r in rows if r["train_tokens_per_second"]),
        "out of memory": sum(1 for r in rows if not r["train_tokens_per_second"]),
        NO_ROW: space.size - len(recorded),
    }


def test_the_fms_example_config_simulates_a_thousandth_of_the_runtime(
    shared_data: Path,
) -> None:
    actuator = load_actuator("replay", {"config": str(EXAMPLES / "fms-a100.yaml")})
    row = csv_rows(shared_data / "fms-acceleration-a100" / "a100_80gb.csv")[0]
    entity = dict(zip(COLUMNS, key_of(row), strict=True))

    replayed = actuator.replayer.replay(entity, "req-1", 1)  # type: ignore[attr-defined]

    assert replayed.duration_s == pytest.approx(float(row["train_runtime"]) / 1000)


def zeus_task(actuator: object, values: dict[str, object], attempt: int) -> MeasurementTask:
    spec = actuator.catalog()[0]  # type: ignore[attr-defined]
    experiment = Experiment.from_spec(spec).parameterize({"eta": 0.3})
    return MeasurementTask("req-zeus", Entity.of(values), experiment, attempt)


async def test_zeus_runs_match_the_hand_computation_from_the_csv_rows(shared_data: Path) -> None:
    folder = shared_data / "zeus-nsdi23-trace"
    epochs = [
        float(r["target_epoch"])
        for r in csv_rows(folder / "summary_train.csv")
        if (r["dataset"], r["batch_size"], r["target_metric"]) == ("cifar100", "1024", "0.6")
    ]
    (power,) = [
        r
        for r in csv_rows(folder / "summary_power_v100.csv")
        if (r["dataset"], r["batch_size"], r["optimizer"], r["power_limit"])
        == ("cifar100", "1024", "adadelta", "175")
    ]
    seconds, watts = float(power["time_per_epoch"]), float(power["average_power"])
    by_hand = {}
    for epoch in epochs:
        converged = epoch <= 100
        trained = epoch if converged else 100.0
        time_s = trained * seconds
        by_hand[trained] = (time_s, time_s * watts, 0.3 * time_s * watts + 0.7 * 250 * time_s)
    actuator = load_actuator("replay", {"config": str(EXAMPLES / "zeus-v100.yaml")})
    entity = {
        "dataset": "cifar100",
        "network": "shufflenetv2",
        "batch_size": 1024,
        "power_limit": 175,
        "gpu_model": "v100",
    }

    seen = set()
    for attempt in range(1, 201):
        outcome = await actuator.measure(zeus_task(actuator, entity, attempt))
        assert isinstance(outcome, ValidMeasurement)
        values = outcome.values
        time_s, energy, cost = by_hand[float(values["target_epoch"])]
        assert values["time_to_accuracy"] == pytest.approx(time_s)
        assert values["energy_to_accuracy"] == pytest.approx(energy)
        assert values["zeus_cost"] == pytest.approx(cost)
        assert values["average_power"] == pytest.approx(watts)
        seen.add(float(values["target_epoch"]))

    assert seen == set(by_hand)


async def test_a_zeus_run_that_never_converges_is_valid_and_costs_max_epochs(
    shared_data: Path,
) -> None:
    actuator = load_actuator("replay", {"config": str(EXAMPLES / "zeus-a40.yaml")})
    entity = {
        "dataset": "imagenet",
        "network": "resnet50",
        "batch_size": 64,
        "power_limit": 300,
        "gpu_model": "a40",
    }
    (power,) = [
        r
        for r in csv_rows(shared_data / "zeus-nsdi23-trace" / "summary_power_a40.csv")
        if (r["dataset"], r["batch_size"], r["power_limit"]) == ("imagenet", "64", "300")
    ]

    outcome = await actuator.measure(zeus_task(actuator, entity, 1))
    elsewhere = await actuator.measure(zeus_task(actuator, {**entity, "gpu_model": "v100"}, 1))

    assert isinstance(outcome, ValidMeasurement)
    assert outcome.values["converged"] == 0
    assert outcome.values["target_epoch"] == 100
    assert outcome.values["time_to_accuracy"] == pytest.approx(100 * float(power["time_per_epoch"]))
    assert isinstance(elsewhere, InvalidMeasurement)
    assert elsewhere.reason.startswith(NO_ROW)


@pytest.mark.parametrize(
    ("config", "space"),
    [
        ("fms-a100.yaml", "fms-a100-space.yaml"),
        ("zeus-v100.yaml", "zeus-v100-space.yaml"),
        ("zeus-a40.yaml", "zeus-a40-space.yaml"),
        ("zeus-v100.yaml", "zeus-bso-space.yaml"),
    ],
)
def test_each_example_space_is_measurable_by_its_replay_config(
    shared_data: Path, config: str, space: str
) -> None:
    actuator = load_actuator("replay", {"config": str(EXAMPLES / config)})
    discovery = load_discovery_space(EXAMPLES / space)

    assert discovery.problems(ExperimentCatalog(actuator.catalog())) == []
