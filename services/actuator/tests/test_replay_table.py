"""The replay actuator over small tables written in a temporary folder."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from discospace.actuator.plugin import Actuator, MeasurementTask
from discospace.actuator.plugins import load_actuator
from discospace.actuator.replay import NO_ROW, ReplayActuator, ReplayParameters
from discospace.core import Entity, Experiment
from discospace.core.errors import SpecError
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

CSV = """model,gpus,batch,peft,tokens_per_s,memory_bytes,runtime
m1,1,4,,100.0,2097152,2.0
m1,1,4,,110.0,2097152,3.0
m1,1,4,,120.0,2097152,4.0
m1,2,4,lora,200.0,,1.0
m1,2,8,lora,,4194304,
"""

ENTITY = {"model_name": "m1", "number_gpus": 1, "batch_size": 4, "peft_method": "none"}
NO_MEMORY = InvalidMeasurement(reason="the recorded row holds no value for 'peak_memory_mib'")


def table_config(file: str = "runs.csv", **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "file": file,
        "experiments": ["replayed"],
        "properties": [
            {"column": "model", "name": "model_name"},
            {"column": "gpus", "name": "number_gpus"},
            {"column": "batch", "name": "batch_size"},
            {"column": "peft", "name": "peft_method", "values": {"": "none"}},
        ],
        "targets": [
            {"column": "tokens_per_s", "name": "train_tokens_per_second"},
            {"column": "memory_bytes", "name": "peak_memory_mib", "scale": 1 / 1048576},
        ],
        "invalid_when": {"missing": "tokens_per_s", "reason": "out of memory"},
    }
    return {**config, **overrides}


def write_config(folder: Path, seed: int = 0, **overrides: Any) -> Path:
    (folder / "runs.csv").write_text(CSV)
    path = folder / "replay.yaml"
    path.write_text(yaml.safe_dump({"table": table_config(**overrides), "seed": seed}))
    return path


def replay(folder: Path, **overrides: Any) -> ReplayActuator:
    return ReplayActuator(ReplayParameters(config=write_config(folder, **overrides)))


def task(
    actuator: ReplayActuator, values: dict[str, Any], attempt: int = 1, request: str = "req-1"
) -> MeasurementTask:
    experiment = Experiment.from_spec(actuator.catalog()[0]).parameterize({})
    return MeasurementTask(request, Entity.of(values), experiment, attempt)


def tokens_replay(file: Path, *extra: dict[str, Any]) -> ReplayActuator:
    """A replay of `file` by model, gpus and batch (and the `extra` properties), measuring
    `tokens_per_s`."""
    config = table_config(
        file=str(file),
        properties=[*table_config()["properties"][:3], *extra],
        targets=[{"column": "tokens_per_s", "name": "train_tokens_per_second"}],
    )
    return ReplayActuator(ReplayParameters.model_validate({"table": config}))


async def measure(actuator: ReplayActuator, values: dict[str, Any], **where: Any) -> Any:
    return await actuator.measure(task(actuator, values, **where))


def test_the_catalog_names_the_renamed_properties_and_targets(tmp_path: Path) -> None:
    actuator = load_actuator("replay", {"config": str(write_config(tmp_path))})
    [spec] = actuator.catalog()

    assert isinstance(actuator, Actuator)
    assert (spec.actuator, spec.experiment) == ("replay", "replayed")
    assert spec.required_properties == ("model_name", "number_gpus", "batch_size", "peft_method")
    assert spec.target_properties == ("train_tokens_per_second", "peak_memory_mib")


async def test_a_property_with_a_default_is_an_optional_property(tmp_path: Path) -> None:
    properties = table_config()["properties"]
    properties[1] = {"column": "gpus", "name": "number_gpus", "default": 2}
    actuator = replay(tmp_path, properties=properties)
    [spec] = actuator.catalog()
    without = {name: value for name, value in ENTITY.items() if name != "number_gpus"}
    experiment = Experiment.from_spec(spec)

    by_default = await actuator.measure(
        MeasurementTask(
            "r", Entity.of({**without, "peft_method": "lora"}), experiment.parameterize({})
        )
    )
    overridden = await actuator.measure(
        MeasurementTask("r", Entity.of(without), experiment.parameterize({"number_gpus": 1}))
    )

    assert spec.optional_properties == {"number_gpus": 2}
    assert "number_gpus" not in spec.required_properties
    assert by_default == NO_MEMORY  # the row of 2 GPUs, which records no memory
    assert isinstance(overridden, ValidMeasurement)
    assert overridden.values["peak_memory_mib"] == 2.0


async def test_a_row_gives_its_targets_renamed_scaled_and_mapped(tmp_path: Path) -> None:
    actuator = replay(tmp_path)

    outcome = await measure(actuator, {**ENTITY, "number_gpus": 2, "peft_method": "lora"})

    # the empty memory cell: a valid result holds every target, and no value is made up
    assert outcome == NO_MEMORY
    complete = await measure(actuator, ENTITY)
    assert isinstance(complete, ValidMeasurement)
    assert complete.values["peak_memory_mib"] == 2.0  # renamed, scaled from bytes


async def test_numbers_match_whatever_their_type(tmp_path: Path) -> None:
    actuator = replay(tmp_path)

    outcome = await measure(actuator, {**ENTITY, "number_gpus": 1.0, "batch_size": 4.0})

    assert isinstance(outcome, ValidMeasurement)
    assert outcome.values["peak_memory_mib"] == 2.0


async def test_numbers_match_in_a_column_that_also_holds_text(tmp_path: Path) -> None:
    csv = CSV + "m1,1,auto,,300.0,1048576,1.0\n"  # the batch column is read as text throughout
    (tmp_path / "runs.csv").write_text(csv)
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump({"table": table_config()}))
    actuator = ReplayActuator(ReplayParameters(config=path))

    by_number = await measure(actuator, ENTITY)
    by_text = await measure(actuator, {**ENTITY, "batch_size": "auto"})

    assert not pd.api.types.is_numeric_dtype(pd.read_csv(tmp_path / "runs.csv")["batch"])
    assert isinstance(by_number, ValidMeasurement)
    assert by_number.values["peak_memory_mib"] == 2.0
    assert by_text == ValidMeasurement(
        values={"train_tokens_per_second": 300.0, "peak_memory_mib": 1.0}
    )


async def test_a_row_without_throughput_is_invalid_with_the_rule_reason(tmp_path: Path) -> None:
    actuator = replay(tmp_path)

    outcome = await measure(
        actuator, {**ENTITY, "number_gpus": 2, "batch_size": 8, "peft_method": "lora"}
    )

    assert outcome == InvalidMeasurement(reason="out of memory")


async def test_an_entity_without_a_row_is_invalid_no_recorded_measurement(tmp_path: Path) -> None:
    actuator = replay(tmp_path)

    outcome = await measure(actuator, {**ENTITY, "model_name": "m2"})
    unmapped = await measure(actuator, {**ENTITY, "peft_method": ""})

    assert outcome == InvalidMeasurement(reason=NO_ROW)
    assert unmapped == InvalidMeasurement(reason=NO_ROW)


async def _tokens(actuator: ReplayActuator, attempts: range, request: str = "req-1") -> list[Any]:
    outcomes = [await measure(actuator, ENTITY, attempt=a, request=request) for a in attempts]
    return [o.values["train_tokens_per_second"] for o in outcomes]


async def test_cycle_serves_each_repeated_run_in_turn(tmp_path: Path) -> None:
    actuator = replay(tmp_path)

    served = await _tokens(actuator, range(1, 7))

    assert sorted(served[:3]) == [100.0, 110.0, 120.0]
    assert served[3:] == served[:3]
    assert await _tokens(actuator, range(1, 7)) == served


async def test_cycle_starts_at_a_seeded_run_per_request(tmp_path: Path) -> None:
    actuator = replay(tmp_path)

    firsts = {(await _tokens(actuator, range(1, 2), f"req-{i}"))[0] for i in range(20)}

    assert firsts == {100.0, 110.0, 120.0}


async def test_random_repeats_are_reproducible_per_seed_and_attempt(tmp_path: Path) -> None:
    actuator = replay(tmp_path, repeats="random")
    other_seed = ReplayActuator(ReplayParameters(config=tmp_path / "replay.yaml", seed=7))

    served = await _tokens(actuator, range(1, 31))

    assert await _tokens(actuator, range(1, 31)) == served
    assert set(served) == {100.0, 110.0, 120.0}
    assert await _tokens(other_seed, range(1, 31)) != served


async def test_a_simulated_duration_comes_from_a_column(tmp_path: Path) -> None:
    actuator = replay(tmp_path, duration={"column": "runtime", "scale": 0.05})
    begun = time.monotonic()

    await measure(actuator, {**ENTITY, "number_gpus": 2, "peft_method": "lora"})

    assert time.monotonic() - begun >= 0.05


@pytest.mark.parametrize("nullable", [False, True], ids=["numpy-columns", "nullable-columns"])
async def test_a_parquet_table_is_read_like_a_csv(tmp_path: Path, nullable: bool) -> None:
    """Nullable columns too (`convert_dtypes()`: Int64, Float64, boolean hold NA for a gap):
    the worker refused to start ('<NA> is not a scalar value') instead of reading an empty
    target, the 'out of memory' row of the table."""
    (tmp_path / "runs.csv").write_text(CSV)
    frame = pd.read_csv(tmp_path / "runs.csv")
    (frame.convert_dtypes() if nullable else frame).to_parquet(tmp_path / "runs.parquet")
    config = table_config(file=str(tmp_path / "runs.parquet"))
    actuator = ReplayActuator(ReplayParameters.model_validate({"table": config}))

    outcome = await measure(actuator, {**ENTITY, "number_gpus": 2, "peft_method": "lora"})
    complete = await measure(actuator, ENTITY)

    assert outcome == NO_MEMORY
    assert isinstance(complete, ValidMeasurement)
    assert complete.values["peak_memory_mib"] == 2.0


async def test_a_float32_parquet_column_matches_the_decimal_it_holds(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "model": ["m1", "m1"],
            "gpus": [1, 1],
            "batch": [4, 4],
            "lr": [0.1, 0.3],
            "tokens_per_s": [100.1, 300.3],
        }
    ).astype({"lr": "float32", "tokens_per_s": "float32"})
    frame.to_parquet(tmp_path / "runs.parquet")
    actuator = tokens_replay(tmp_path / "runs.parquet", {"column": "lr", "name": "learning_rate"})
    entity = {"model_name": "m1", "number_gpus": 1, "batch_size": 4}

    outcome = await measure(actuator, {**entity, "learning_rate": 0.3})

    assert outcome == ValidMeasurement(values={"train_tokens_per_second": 300.3})


@pytest.mark.parametrize("kind", ["Float32", "decimal"])
async def test_a_nullable_float32_or_decimal_property_column_matches_the_decimal_it_holds(
    tmp_path: Path, kind: str
) -> None:
    """A nullable Float32 column (`convert_dtypes()` of a float32 one) matched no entity (its
    0.1 was 0.10000000149011612); a decimal column stopped the worker ('Decimal('0.10') is not
    a scalar value')."""
    import decimal

    import pyarrow as pa

    lrs = [0.1, 0.3]
    frame = pd.DataFrame(
        {"model": ["m1", "m1"], "gpus": [1, 1], "batch": [4, 4], "tokens_per_s": [100.0, 300.0]}
    )
    if kind == "Float32":
        frame["lr"] = pd.array(lrs, dtype="Float32")
        frame.to_parquet(tmp_path / "runs.parquet")
    else:
        frame["lr"] = [decimal.Decimal("0.10"), decimal.Decimal("0.30")]
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame)
        table = table.set_column(4, "lr", table["lr"].cast(pa.decimal128(4, 2)))
        pq.write_table(table, tmp_path / "runs.parquet")
    actuator = tokens_replay(tmp_path / "runs.parquet", {"column": "lr", "name": "learning_rate"})
    entity = {"model_name": "m1", "number_gpus": 1, "batch_size": 4}

    outcome = await measure(actuator, {**entity, "learning_rate": 0.3})

    assert outcome == ValidMeasurement(values={"train_tokens_per_second": 300.0})


async def test_a_whole_number_written_as_text_finds_its_own_row(tmp_path: Path) -> None:
    """In a column read as text ("none" in a row), the id 2^53 + 1 went through a float: it
    found no row, and 2^53 was served its row."""
    (tmp_path / "runs.csv").write_text(
        "model,gpus,batch,tokens_per_s\n"
        "m1,1,9007199254740993,100.0\nm1,1,none,200.0\nm1,1,4,300.0\n"
    )
    actuator = tokens_replay(tmp_path / "runs.csv")
    entity = {"model_name": "m1", "number_gpus": 1}

    own = await measure(actuator, {**entity, "batch_size": 2**53 + 1})
    other = await measure(actuator, {**entity, "batch_size": 2**53})

    assert own == ValidMeasurement(values={"train_tokens_per_second": 100.0})
    assert other == InvalidMeasurement(reason=NO_ROW)


async def test_a_csv_property_cell_holds_what_is_written(tmp_path: Path) -> None:
    """pandas reads `NA` and `None` as missing: the region `NA` (North America) and the peft
    method `None` were keyed as empty cells, and their entities found no row."""
    (tmp_path / "runs.csv").write_text(
        "model,gpus,batch,peft,tokens_per_s\nm1,1,4,None,100.0\nm1,1,4,NA,200.0\n"
        "m1,1,4,,300.0\nm1,1,8,lora,NA\n"
    )
    actuator = tokens_replay(tmp_path / "runs.csv", {"column": "peft", "name": "peft_method"})
    entity = {"model_name": "m1", "number_gpus": 1, "batch_size": 4}

    by_peft = {
        peft: await measure(actuator, {**entity, "peft_method": peft})
        for peft in ("None", "NA", "")
    }
    missing = await measure(actuator, {**entity, "batch_size": 8, "peft_method": "lora"})

    assert by_peft == {
        peft: ValidMeasurement(values={"train_tokens_per_second": tps})
        for peft, tps in (("None", 100.0), ("NA", 200.0), ("", 300.0))
    }
    assert missing == InvalidMeasurement(reason="out of memory")  # a target's NA is still missing


async def test_a_whole_decimal_property_cell_is_read_exactly(tmp_path: Path) -> None:
    """A decimal128(20, 0) column of run ids went through a float: 2^53 + 1 was 2^53, and the
    entity 2^53 was served 2^53 + 1's row as a repeat of its own."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = [decimal.Decimal(2**53), decimal.Decimal(2**53 + 1)]
    table = pa.table(
        {
            "model": ["m1", "m1"],
            "gpus": [1, 1],
            "batch": pa.array(ids, pa.decimal128(20, 0)),
            "tokens_per_s": [100.0, 200.0],
        }
    )
    pq.write_table(table, tmp_path / "runs.parquet")
    actuator = tokens_replay(tmp_path / "runs.parquet")
    entity = {"model_name": "m1", "number_gpus": 1}

    found = [await measure(actuator, {**entity, "batch_size": 2**53 + k}) for k in (0, 1)]

    assert found == [
        ValidMeasurement(values={"train_tokens_per_second": tps}) for tps in (100.0, 200.0)
    ]


async def test_a_missing_word_in_a_csv_property_column_keeps_its_other_cells_typed(
    tmp_path: Path,
) -> None:
    """Read again as text because one cell was `NA`, the whole column was text: `True` no
    longer matched the entity's `true`. And a column that is a target too reads as a target:
    its `NA` is a missing value."""
    (tmp_path / "runs.csv").write_text(
        "model,gpus,batch,flash,tokens_per_s\n"
        "m1,1,4,True,10.0\nm1,1,4,False,20.0\nm1,1,4,NA,30.0\nm1,1,8,True,NA\n"
    )
    actuator = tokens_replay(
        tmp_path / "runs.csv",
        {"column": "flash", "name": "flash"},
        {"column": "tokens_per_s", "name": "recorded", "default": ""},
    )
    entity = {"model_name": "m1", "number_gpus": 1, "batch_size": 4}

    typed = await measure(actuator, {**entity, "flash": True, "recorded": 10.0})
    word = await measure(actuator, {**entity, "flash": "NA", "recorded": 30.0})
    missing = await measure(actuator, {**entity, "batch_size": 8, "flash": True, "recorded": ""})

    assert typed == ValidMeasurement(values={"train_tokens_per_second": 10.0})
    assert word == ValidMeasurement(values={"train_tokens_per_second": 30.0})
    assert missing == InvalidMeasurement(reason="out of memory")


def test_texts_of_one_column_that_read_as_one_number_are_refused(tmp_path: Path) -> None:
    """In a column of text ("auto" in a row), "1.10" and "1.1" were one key: the entity
    "1.1" was served the row of "1.10", as a repeated run of its own."""
    frame = pd.DataFrame(
        {
            "model": ["m1", "m1", "m1"],
            "gpus": [1, 1, 1],
            "batch": ["1.10", "1.1", "auto"],
            "tokens_per_s": [100.0, 200.0, 300.0],
        }
    )
    frame.to_parquet(tmp_path / "runs.parquet")
    config = table_config(
        file=str(tmp_path / "runs.parquet"),
        properties=table_config()["properties"][:3],
        targets=[{"column": "tokens_per_s", "name": "train_tokens_per_second"}],
    )

    with pytest.raises(SpecError) as refused:
        ReplayActuator(ReplayParameters.model_validate({"table": config}))

    assert "column 'batch': rows 1 and 2 hold '1.10' and '1.1', which read as one number" in (
        str(refused.value)
    )


def test_a_table_with_only_a_header_is_refused(tmp_path: Path) -> None:
    """Every measurement would have been 'no recorded measurement'."""
    config = write_config(tmp_path)
    (tmp_path / "runs.csv").write_text(CSV.splitlines()[0] + "\n")
    with pytest.raises(SpecError, match=r"runs.csv has no rows, only a header$"):
        ReplayActuator(ReplayParameters(config=config))


@pytest.mark.parametrize(
    ("column", "cells", "row", "problem"),
    [
        ("model", [pd.Timestamp("2020-01-01")] * 5, 1, "Timestamp('2020-01-01 00:00:00') is not a"),
        ("model", [b"m1"] * 5, 1, "b'm1' is not a scalar value (string, number or boolean)"),
        ("batch", [4.0, float("inf"), 4.0, 4.0, 8.0], 2, "inf is not a finite number"),
    ],
)
def test_a_property_cell_that_cannot_be_a_value_is_refused_naming_column_and_row(
    tmp_path: Path, column: str, cells: list[object], row: int, problem: str
) -> None:
    """A Parquet column of timestamps or bytes raised a bare TypeError at start (exit 1); an
    infinite cell, a sentence naming neither the file nor the column."""
    config = write_config(tmp_path, file="runs.parquet")
    frame = pd.read_csv(tmp_path / "runs.csv")
    frame[column] = cells
    frame.to_parquet(tmp_path / "runs.parquet")
    with pytest.raises(SpecError) as refused:
        ReplayActuator(ReplayParameters(config=config))
    where = f"table: {tmp_path / 'runs.parquet'}, column '{column}', row {row}: "
    assert str(refused.value).startswith(where)
    assert problem in str(refused.value)


def _replay_of(folder: Path, csv: str, **overrides: Any) -> ReplayActuator:
    (folder / "runs.csv").write_text(csv)
    path = folder / "replay.yaml"
    path.write_text(yaml.safe_dump({"table": table_config(**overrides)}))
    return ReplayActuator(ReplayParameters(config=path))


async def test_text_in_a_column_of_numbers_makes_its_row_invalid_and_the_rest_stay_numbers(
    tmp_path: Path,
) -> None:
    """One "OOM" cell made pandas read the column as text: every value was recorded as text,
    and the scale to MiB was skipped."""
    csv = CSV + "m1,4,4,,OOM,OOM,1.0\n"
    actuator = _replay_of(tmp_path, csv, invalid_when=[])

    numbers = await measure(actuator, ENTITY)
    oom = await measure(actuator, {**ENTITY, "number_gpus": 4})

    assert isinstance(numbers, ValidMeasurement)
    assert numbers.values["peak_memory_mib"] == 2.0
    assert numbers.values["train_tokens_per_second"] in (100, 110, 120)
    assert oom == InvalidMeasurement(
        reason="the recorded row holds 'OOM' for 'train_tokens_per_second', not a number"
    )


async def test_a_column_of_text_targets_stays_text(tmp_path: Path) -> None:
    csv = "model,gpus,batch,peft,tokens_per_s,memory_bytes,runtime\nm1,1,4,,fast,big,1.0\n"
    actuator = _replay_of(tmp_path, csv, invalid_when=[])
    outcome = await measure(actuator, ENTITY)
    assert outcome == ValidMeasurement(
        values={"train_tokens_per_second": "fast", "peak_memory_mib": "big"}
    )


async def test_decimal_targets_are_numbers_and_a_timestamp_target_stops_the_worker_at_start(
    tmp_path: Path,
) -> None:
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {
        "model": ["m1"],
        "gpus": [1],
        "batch": [4],
        "peft": [None],
        "tokens_per_s": pa.array([decimal.Decimal("100.50")], pa.decimal128(10, 2)),
        "memory_bytes": [2097152],
    }
    pq.write_table(pa.table(columns), tmp_path / "runs.parquet")
    config = table_config(file=str(tmp_path / "runs.parquet"))
    outcome = await measure(
        ReplayActuator(ReplayParameters.model_validate({"table": config})), ENTITY
    )
    assert outcome == ValidMeasurement(
        values={"train_tokens_per_second": 100.5, "peak_memory_mib": 2.0}
    )

    columns["memory_bytes"] = pa.array([pd.Timestamp("2024-01-01")])
    pq.write_table(pa.table(columns), tmp_path / "runs.parquet")
    with pytest.raises(SpecError, match=r"column 'memory_bytes', row 1: Timestamp"):
        ReplayActuator(ReplayParameters.model_validate({"table": config}))


def test_a_duration_that_is_not_a_finite_number_of_seconds_is_no_wait(tmp_path: Path) -> None:
    """An "inf" runtime slept until the worker's timeout, on every retry."""
    csv = "model,gpus,batch,peft,tokens_per_s,memory_bytes,runtime\nm1,1,4,,1.0,1,inf\n"
    actuator = _replay_of(tmp_path, csv, duration={"column": "runtime"})
    assert actuator.replayer.replay(ENTITY, "req", 1).duration_s == 0.0


def test_a_value_map_tells_booleans_from_numbers_and_reads_numbers_in_ascii() -> None:
    """Python has True == 1: a map of `true` caught the cells holding 1 and 1.0; and float()
    read the text 1_000 as the number 1000."""
    from discospace.actuator.replay.table import ValueMap, match_text

    by_flag = ValueMap({True: "yes", "1": "one"})
    assert (by_flag(True), by_flag(1), by_flag(1.0), by_flag("true")) == (
        "yes",
        "one",
        "one",
        "yes",
    )
    by_number = ValueMap({1: "one"})
    assert (by_number(1), by_number("1"), by_number(True)) == ("one", "one", True)
    assert (match_text("1_000"), match_text(" 1e3 "), match_text("4.0")) == ("1_000", "1000", "4")


async def test_rows_ending_in_a_comma_keep_their_columns(tmp_path: Path) -> None:
    """pandas made the first column the index of rows one field longer than the header, and
    every other column held its right-hand neighbour's cells: each recorded configuration was
    'no recorded measurement', and one the table lacks was served its runtime as throughput."""
    file = tmp_path / "runs.csv"
    file.write_text("model,gpus,batch,tokens_per_s\nm1,1,4,100.0,\nm1,1,8,200.0,\n")
    actuator = tokens_replay(file)

    assert await measure(actuator, {"model_name": "m1", "number_gpus": 1, "batch_size": 8}) == (
        ValidMeasurement(values={"train_tokens_per_second": 200.0})
    )


def test_a_row_with_more_fields_than_the_header_is_refused_in_one_sentence(tmp_path: Path) -> None:
    file = tmp_path / "runs.csv"
    file.write_text("model,gpus,batch,tokens_per_s\nm1,1,4,100.0,7\n")

    with pytest.raises(SpecError, match="has a row holding more fields than the header names"):
        tokens_replay(file)


async def test_a_parquet_table_whose_key_was_written_as_its_index_is_read(tmp_path: Path) -> None:
    """`to_parquet` after `set_index("model")`: 'has no column model', where store import
    reads the same file."""
    (tmp_path / "runs.csv").write_text(CSV)
    for kept in (True, False):  # drop=False: inserting it again failed ('already exists')
        frame = pd.read_csv(tmp_path / "runs.csv").set_index("model", drop=not kept)
        frame.to_parquet(tmp_path / "runs.parquet")

        complete = await measure(tokens_replay(tmp_path / "runs.parquet"), ENTITY)

        assert isinstance(complete, ValidMeasurement)
