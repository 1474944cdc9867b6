"""``store import``, the pure part: a file's rows become ``MeasurementCompleted`` events of one
experiment of a registered space, or are refused with their number (no broker)."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from discospace.cli.errors import CliError
from discospace.cli.import_rows import (
    IMPORT_WORKER_ID,
    ImportSource,
    ImportTarget,
    completed_event,
    import_target,
    map_rows,
    split_stored,
)
from discospace.cli.import_table import (
    CellError,
    ColumnPlan,
    duration,
    parse_renames,
    plan_columns,
    read_table,
    target_value,
)
from discospace.core import ExperimentRef, entity_id
from discospace.events import MeasurementCompleted, SpaceRegistered, decode, encode

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
Target = Callable[..., ImportTarget]


@pytest.fixture
def target(registered: Callable[..., SpaceRegistered]) -> Target:
    """Factory: the import target of a registered space (see conftest) and experiment."""

    def make(experiment: str | None = None, **space: Any) -> ImportTarget:
        return import_target(registered(**space), experiment)

    return make


def plan_for(frame: pd.DataFrame, to: ImportTarget, *renames: str) -> ColumnPlan:
    return plan_columns(
        list(frame.columns),
        to.entity_space.names,
        to.targets,
        to.experiment_id,
        parse_renames(renames),
    )


def csv(tmp_path: Path, text: str, name: str = "runs.csv") -> pd.DataFrame:
    path = tmp_path / name
    path.write_text(text)
    return read_table(path).frame


SOURCE = ImportSource("runs.csv", "ab" * 32, "March runs", "alice")


def events_of(frame: pd.DataFrame, to: ImportTarget, source: ImportSource = SOURCE):
    mapped = map_rows(frame, plan_for(frame, to), to)
    assert mapped.refused == []
    return [completed_event(result, to, source, NOW) for result in mapped.results]


def test_a_row_becomes_a_completed_measurement_of_the_spaces_entity_and_experiment(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput,peak_memory\n4,llama-7b,4210.5,6021\n")
    to = target()

    [event] = events_of(frame, to)

    assert isinstance(event, MeasurementCompleted)
    assert event.entity_values == {"batch_size": 4, "model_name": "llama-7b"}
    assert event.entity_id == entity_id({"batch_size": 4, "model_name": "llama-7b"})
    assert (event.space_id, event.sample_store) == (to.space_id, "store-a")
    assert event.experiment_id == "benchmark"
    assert event.values == {"throughput": 4210.5, "peak_memory": 6021}
    assert (event.is_valid, event.invalid_reason) == (True, None)
    assert event.worker_id == IMPORT_WORKER_ID
    assert event.topic().endswith(".measurements")


def test_every_result_carries_its_provenance_and_survives_the_wire(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n1,llama-7b,10\n2,llama-7b,20\n")

    events = events_of(frame, target())

    assert [e.provenance.row for e in events if e.provenance] == [1, 2]
    provenance = events[1].provenance
    assert provenance is not None
    assert (provenance.source, provenance.sha256) == ("runs.csv", "ab" * 32)
    assert (provenance.note, provenance.imported_by) == ("March runs", "alice")
    assert decode(encode(events[1])) == events[1]


def test_a_result_an_actuator_measured_is_written_without_a_provenance_key(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n1,llama-7b,10\n")
    [event] = events_of(frame, target())
    measured = event.model_copy(update={"provenance": None})

    assert "provenance" not in json.loads(encode(measured))
    assert decode(encode(measured)) == measured


def test_ids_depend_on_the_store_entity_experiment_and_file_only(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n1,llama-7b,10\n")
    other_space = target(batch_sizes=(1, 2))  # another space on the same store
    other_file = ImportSource("runs.csv", "cd" * 32, "", "bob")

    [first] = events_of(frame, target())
    [again] = events_of(frame, target(), ImportSource("renamed.csv", "ab" * 32, "", "bob"))
    [elsewhere] = events_of(frame, other_space)
    [changed] = events_of(frame, target(), other_file)

    assert first.event_id == again.event_id == elsewhere.event_id
    assert first.request_id == again.request_id
    assert changed.event_id != first.event_id
    assert first.space_id != elsewhere.space_id


def test_a_numeric_cell_is_read_in_its_domain_so_four_and_four_point_zero_are_one_entity(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n4.0,llama-7b,1\n")
    [event] = events_of(frame, target())
    assert event.entity_values["batch_size"] == 4
    assert event.entity_id == entity_id({"batch_size": 4, "model_name": "llama-7b"})


def test_a_row_outside_the_space_is_refused_with_its_number_and_why(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n1,llama-7b,10\n3,llama-7b,11\n")
    to = target()

    mapped = map_rows(frame, plan_for(frame, to), to)

    assert [result.row for result in mapped.results] == [1]
    [refused] = mapped.refused
    assert refused.row == 2
    assert refused.reason.startswith(f"row 2 is not an entity of space {to.space_id}: ")
    assert "'batch_size' has the value 3" in refused.reason


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (",llama-7b,10,,", "row 1 has no value for the property batch_size"),
        ("1,llama-7b,,,", "row 1 has no value for any target of benchmark"),
        ("1,llama-7b,10,true,OOM", "row 1 is marked valid but gives the invalid_reason 'OOM'"),
        ("1,llama-7b,10,maybe,", "row 1 cannot be read: is_valid 'maybe' is not true or false"),
        ("1,llama-7b,inf,,", "row 1 cannot be read: throughput inf is not a finite number"),
        (
            f"1,llama-7b,{2**63},,",
            f"row 1 cannot be read: throughput {2**63} is beyond a 64-bit whole number",
        ),
        (
            "1,llama-7b," + "9" * 5000 + ",,",
            "row 1 cannot be read: throughput 999999999999... (5000 digits) is beyond a 64-bit",
        ),
    ],
)
def test_a_row_that_cannot_be_a_result_is_refused_in_one_sentence(
    tmp_path: Path, row: str, reason: str, target: Target
) -> None:
    frame = csv(tmp_path, f"batch_size,model_name,throughput,is_valid,invalid_reason\n{row}\n")
    to = target()

    [refused] = map_rows(frame, plan_for(frame, to), to).refused

    assert refused.reason.startswith(reason)


def test_an_invalid_result_keeps_its_reason_and_an_invalid_reason_alone_makes_it_invalid(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(
        tmp_path,
        "batch_size,model_name,throughput,is_valid,invalid_reason\n"
        "8,llama-7b,,false,CUDA out of memory\n"
        "4,llama-7b,,,node lost\n"
        "2,llama-7b,,no,\n"
        "1,llama-7b,12,,\n",
    )

    events = events_of(frame, target())

    assert [(e.is_valid, e.invalid_reason) for e in events] == [
        (False, "CUDA out of memory"),
        (False, "node lost"),
        (False, "recorded as invalid in the imported file"),
        (True, None),
    ]


def test_a_missing_value_word_as_the_invalid_reason_is_no_reason(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(
        tmp_path,
        "batch_size,model_name,throughput,invalid_reason\n"
        "8,llama-7b,4210.5,NA\n"  # as R's write.csv writes a missing value
        "4,llama-7b,3900,nan\n"
        "2,llama-7b,,OOM\n",
    )

    events = events_of(frame, target())

    assert [(e.is_valid, e.invalid_reason) for e in events] == [
        (True, None),
        (True, None),
        (False, "OOM"),
    ]


def test_a_long_invalid_reason_is_shortened_as_an_actuators_is(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, f"batch_size,model_name,invalid_reason\n8,llama-7b,{'x' * 5000}\n")

    [event] = events_of(frame, target())

    assert event.invalid_reason is not None
    assert 100 < len(event.invalid_reason) <= 500


def test_text_in_a_column_of_numbers_is_refused_not_stored_as_text(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(
        tmp_path,
        'batch_size,model_name,throughput\n1,llama-7b,999\n2,llama-7b,"1,000"\n4,llama-7b,-\n',
    )
    to = target()

    mapped = map_rows(frame, plan_for(frame, to), to)

    assert [r.values for r in mapped.results] == [{"throughput": 999}]
    assert [r.reason for r in mapped.refused] == [
        "row 2 cannot be read: throughput '1,000' is not a number, as the column's other cells are",
        "row 3 cannot be read: throughput '-' is not a number, as the column's other cells are",
    ]


def test_a_boolean_or_a_python_only_spelling_in_a_column_of_numbers_is_refused(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(
        tmp_path,
        "batch_size,model_name,throughput\n1,llama-7b,999\n2,llama-7b,true\n4,llama-7b,1_000\n",
    )
    to = target()

    mapped = map_rows(frame, plan_for(frame, to), to)

    assert [r.values for r in mapped.results] == [{"throughput": 999}]
    assert [r.reason for r in mapped.refused] == [
        "row 2 cannot be read: throughput 'true' is not a number, as the column's other cells are",
        "row 3 cannot be read: throughput '1_000' is not a number, as the column's other cells are",
    ]


def test_is_valid_written_as_pandas_writes_a_float_column_is_read(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(
        tmp_path,
        "batch_size,model_name,throughput,is_valid,invalid_reason\n"
        "1,llama-7b,10,1.0,\n2,llama-7b,,0.0,OOM\n",
    )

    events = events_of(frame, target())

    assert [(e.is_valid, e.invalid_reason) for e in events] == [(True, None), (False, "OOM")]


def test_a_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    """pandas kept the first and renamed the second 'throughput.1', then ignored in silence."""
    path = tmp_path / "runs.csv"
    path.write_text("batch_size,model_name,throughput,throughput\n1,llama-7b,10,20\n")

    with pytest.raises(CliError) as refused:
        read_table(path)

    assert str(refused.value) == (
        f"{path}: the header names the column 'throughput' more than once (columns 3, 4); "
        "nothing was imported: name each column once"
    )


@pytest.mark.parametrize("name", ["runs.csv", "runs.csv.gz", "zero.csv"])
def test_a_table_over_the_size_limit_is_refused_before_it_is_parsed(
    tmp_path: Path, name: str
) -> None:
    """`/dev/zero`, or a small gzip of zeros, was read until the memory ran out (a traceback
    ending in MemoryError)."""
    text = ("batch_size,model_name,throughput\n" + "8,llama-7b,300\n" * 100).encode()
    path = tmp_path / name
    if name == "zero.csv":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)

    with pytest.raises(CliError) as refused:
        read_table(path, max_bytes=len(text) - 1)

    assert str(refused.value).startswith(
        f"{path}: holds more than 0 MiB (decompressed), the most `store import` reads at once; "
        "nothing was imported: split it into smaller files"
    )
    if name != "zero.csv":
        assert len(read_table(path, max_bytes=len(text)).frame) == 100


def test_a_parquet_file_holding_more_rows_than_the_limit_is_refused(tmp_path: Path) -> None:
    """Only the file's size was compared: its encodings made a 160 kB file twelve million rows,
    all read into memory."""
    path = tmp_path / "runs.parquet"
    rows = 200_000
    pd.DataFrame({"batch_size": [8] * rows, "throughput": [300.0] * rows}).to_parquet(path)
    assert path.stat().st_size < 100_000

    with pytest.raises(CliError, match=r"holds more than 1 MiB \(decompressed\)"):
        read_table(path, max_bytes=1 << 20)
    assert len(read_table(path, max_bytes=4 << 20).frame) == rows


def test_a_file_name_that_is_not_utf8_is_recorded_readably(tmp_path: Path) -> None:
    """Its provenance refused the name ('input should be a valid string'), dry run included."""
    path = tmp_path / os.fsdecode(b"runs-\xff.csv")
    path.write_text("batch_size,model_name,throughput\n1,llama-7b,10\n")

    table = read_table(path)

    assert table.name == "runs-\ufffd.csv"
    table.name.encode("utf-8")  # an event can hold it


def test_a_file_that_is_not_gzip_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv.gz"
    path.write_bytes(b"batch_size,model_name\n1,x\n")

    with pytest.raises(CliError, match=r"runs.csv.gz: cannot be read as gzip \(Not a gzipped file"):
        read_table(path)


def test_rows_ending_in_a_delimiter_keep_their_columns(tmp_path: Path, target: Target) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n8,llama-7b,300,\n4,llama-7b,200,\n")

    [first, second] = events_of(frame, target())

    assert (first.entity_values["batch_size"], first.values) == (8, {"throughput": 300})
    assert (second.entity_values["batch_size"], second.values) == (4, {"throughput": 200})


def test_a_row_with_more_fields_than_the_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text("batch_size,model_name,throughput\n8,llama-7b,300,12\n")

    with pytest.raises(CliError) as refused:
        read_table(path)

    assert str(refused.value) == (
        f"{path}: a row holds more fields than the header names columns; nothing was imported: "
        "give every extra field a column name, or remove it (R's write.table writes row names "
        "without a header: write with row.names = FALSE)"
    )


def test_a_parquet_key_written_as_the_index_and_kept_as_a_column_is_read_once(
    tmp_path: Path,
) -> None:
    """`set_index("batch_size", drop=False)`: inserting the index as a column again failed
    ('cannot insert batch_size, already exists')."""
    path = tmp_path / "runs.parquet"
    frame = pd.DataFrame({"batch_size": [8, 4], "throughput": [300.0, 200.0]})
    frame.set_index("batch_size", drop=False).to_parquet(path)

    read = read_table(path).frame

    assert list(read.columns) == ["batch_size", "throughput"]
    assert read["batch_size"].tolist() == [8, 4]


def test_a_second_row_of_one_entity_is_refused_naming_the_first(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n2,llama-7b,1\n2.0,llama-7b,2\n")
    to = target()

    mapped = map_rows(frame, plan_for(frame, to), to)

    assert [r.reason for r in mapped.refused] == ["row 2 holds the same entity as row 1"]


def test_map_renames_columns_and_the_other_columns_are_named_as_ignored(
    tmp_path: Path, target: Target
) -> None:
    frame = csv(
        tmp_path,
        "bs,model_name,tokens_per_s,throughput,notes\n2,llama-7b,99.5,1,warm\n",
    )
    to = target()

    plan = plan_for(frame, to, "bs=batch_size", "tokens_per_s=throughput")
    [result] = map_rows(frame, plan, to).results

    assert plan.constitutive == {"batch_size": "bs", "model_name": "model_name"}
    assert plan.targets == {"throughput": "tokens_per_s"}
    assert plan.ignored == ("throughput", "notes")
    assert result.values == {"throughput": 99.5}


def test_an_observed_property_id_names_a_target_column(tmp_path: Path, target: Target) -> None:
    frame = csv(tmp_path, "batch_size,model_name,benchmark.throughput\n2,llama-7b,7\n")
    [event] = events_of(frame, target())
    assert event.values == {"throughput": 7}


@pytest.mark.parametrize(
    ("header", "renames", "message"),
    [
        ("model_name,throughput", (), "the file has no column for the property batch_size"),
        ("batch_size,model_name,notes", (), "no column for any target property of benchmark"),
        ("batch_size,model_name,throughput", ("bs=batch_size",), "has no column 'bs'"),
        ("b,model_name,throughput", ("b=size",), "'size' is not a property of the space"),
        (
            "a,b,model_name,throughput",
            ("a=batch_size", "b=batch_size"),
            "columns 'a' and 'b' are both mapped to 'batch_size'",
        ),
        (
            "batch_size,model_name,throughput,benchmark.throughput",
            (),
            "columns 'throughput' and 'benchmark.throughput' both give 'throughput'",
        ),
    ],
)
def test_columns_that_do_not_fit_the_space_are_one_sentence(
    header: str, renames: tuple[str, ...], message: str, target: Target
) -> None:
    frame = pd.DataFrame(columns=header.split(","))
    with pytest.raises(CliError, match=message):
        plan_for(frame, target(), *renames)


def test_a_map_option_must_be_column_equals_property() -> None:
    with pytest.raises(CliError, match="--map 'bs' is not FILE_COLUMN=PROPERTY"):
        parse_renames(["bs"])


def test_the_experiment_is_named_by_its_parameterized_id_or_name_and_optional_when_alone(
    target: Target, registered: Callable[..., SpaceRegistered]
) -> None:
    two = (
        ExperimentRef(actuator="synthetic", experiment="benchmark"),
        ExperimentRef(actuator="synthetic", experiment="warmup", parameterization={"steps": 5}),
    )
    space = registered("store-a", *two)

    assert target().experiment_id == "benchmark"
    assert import_target(space, "warmup").experiment_id == "warmup-steps.5"
    assert import_target(space, "warmup-steps.5").targets == ("seconds",)
    with pytest.raises(CliError, match=r"measures benchmark, warmup-steps\.5: name one"):
        import_target(space, None)
    with pytest.raises(CliError, match="has no experiment nope; its experiments: benchmark"):
        import_target(space, "nope")


def test_rows_whose_entity_the_store_holds_are_left_out(tmp_path: Path, target: Target) -> None:
    frame = csv(tmp_path, "batch_size,model_name,throughput\n1,llama-7b,1\n2,llama-7b,2\n")
    to = target()
    results = map_rows(frame, plan_for(frame, to), to).results

    new, held = split_stored(results, {results[0].entity.id})

    assert [r.row for r in new] == [2]
    assert [r.row for r in held] == [1]


def test_csv_gzip_and_parquet_files_give_the_same_events(tmp_path: Path, target: Target) -> None:
    text = "batch_size,model_name,throughput,is_valid\n1,llama-7b,10.5,true\n8,granite-8b,,false\n"
    typed = pd.DataFrame(
        {
            "batch_size": [1, 8],
            "model_name": ["llama-7b", "granite-8b"],
            "throughput": [10.5, None],
            "is_valid": [True, False],
        }
    )
    (tmp_path / "runs.csv").write_text(text)
    (tmp_path / "runs.csv.gz").write_bytes(gzip.compress(text.encode()))
    typed.to_parquet(tmp_path / "runs.parquet")

    frames = [read_table(tmp_path / n).frame for n in ("runs.csv", "runs.csv.gz", "runs.parquet")]
    found = [[e.model_dump(exclude={"event_id"}) for e in events_of(f, target())] for f in frames]

    assert found[0] == found[1] == found[2]
    assert [e["values"] for e in found[0]] == [{"throughput": 10.5}, {}]


def test_a_parquet_index_column_and_decimal_columns_are_read_as_values(
    tmp_path: Path, target: Target
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    indexed = pd.DataFrame({"batch_size": [2], "model_name": ["llama-7b"], "throughput": [1.0]})
    indexed.set_index("batch_size").to_parquet(tmp_path / "indexed.parquet")
    decimals = pa.table(
        {
            "batch_size": pa.array([Decimal("4")], pa.decimal128(5, 0)),
            "model_name": ["llama-7b"],
            "throughput": pa.array([Decimal("1.50")], pa.decimal128(5, 2)),
        }
    )
    pq.write_table(decimals, tmp_path / "decimals.parquet")

    [by_index] = events_of(read_table(tmp_path / "indexed.parquet").frame, target())
    [by_decimal] = events_of(read_table(tmp_path / "decimals.parquet").frame, target())

    assert (by_index.entity_values["batch_size"], by_index.values) == (2, {"throughput": 1.0})
    assert (by_decimal.entity_values["batch_size"], by_decimal.values) == (4, {"throughput": 1.5})


def test_a_float32_parquet_column_is_read_as_the_decimals_it_holds(
    tmp_path: Path, target: Target
) -> None:
    """Its 0.1 was 0.10000000149011612: not in a domain listing 0.1 (every row refused), and a
    stored target no one measured. The replay actuator reads such a column as 0.1 already."""
    frame = pd.DataFrame(
        {"batch_size": [0.1, 0.3], "model_name": ["llama-7b"] * 2, "throughput": [0.1, 2.7]}
    ).astype({"batch_size": "float32", "throughput": "float32"})
    frame.to_parquet(tmp_path / "runs.parquet")
    frame.set_index("batch_size").to_parquet(tmp_path / "indexed.parquet")  # read as a column

    for name in ("runs.parquet", "indexed.parquet"):
        events = events_of(read_table(tmp_path / name).frame, target(batch_sizes=(0.1, 0.3)))
        assert [(e.entity_values["batch_size"], e.values) for e in events] == [
            (0.1, {"throughput": 0.1}),
            (0.3, {"throughput": 2.7}),
        ]


def test_an_identifier_read_from_csv_names_the_entity_yaml_and_parquet_name(
    tmp_path: Path,
) -> None:
    from discospace.core import ExperimentSpec, PropertySpec, SpaceSpec
    from discospace.core.discovery import DiscoverySpace
    from discospace.core.loading import parse_document
    from discospace.events import new_event

    benchmark = ExperimentSpec(
        actuator="synthetic",
        experiment="benchmark",
        target_properties=("throughput",),
        required_properties=("batch_size", "model_name"),
    )
    spec = SpaceSpec(
        sample_store="s",
        entity_space=(
            PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
            PropertySpec(name="model_name", type="identifier"),
        ),
        measurement_space=(ExperimentRef(actuator="synthetic", experiment="benchmark"),),
    )
    space = DiscoverySpace.from_spec(spec)
    to = import_target(
        new_event(
            SpaceRegistered,
            submission_id="s",
            space_id=space.id,
            spec=spec,
            experiments=(benchmark,),
        ),
        None,
    )
    text = "batch_size,model_name,throughput\n1,7,10\n2,true,10\n4,007,3\n8,7.50,3\n"
    (tmp_path / "runs.csv").write_text(text)
    pd.DataFrame({"batch_size": [1], "model_name": [7], "throughput": [10]}).to_parquet(
        tmp_path / "runs.parquet"
    )
    table = read_table(tmp_path / "runs.csv")
    parquet = read_table(tmp_path / "runs.parquet")

    from_csv = map_rows(table.frame, plan_for(table.frame, to), to, typed=table.typed)
    from_parquet = map_rows(parquet.frame, plan_for(parquet.frame, to), to, typed=parquet.typed)

    read_as_yaml = parse_document("[7, true, 007, 7.50]", "entities.yaml")
    assert [r.entity.as_dict()["model_name"] for r in from_csv.results] == read_as_yaml
    assert read_as_yaml == [7, True, 7, 7.5]
    assert from_csv.results[0].entity.id == from_parquet.results[0].entity.id
    assert (
        from_csv.results[0].entity.id
        == space.entity_space.normalise({"batch_size": 1, "model_name": 7}).id
    )


def test_a_text_cell_of_a_parquet_file_is_kept_exactly(tmp_path: Path, target: Target) -> None:
    """A typed string is the text it holds: '0042' was stored as 42, '1e3' as 1000.0, 'NA' was
    dropped, and one such cell made the whole column numeric, refusing its other text cells."""
    texts = ["0042", "1e3", "NA", "  padded  é 漢字"]
    frame = pd.DataFrame(
        {
            "batch_size": [1, 2, 4, 8],
            "model_name": ["llama-7b"] * 4,
            "throughput": texts,
        }
    )
    frame.to_parquet(tmp_path / "runs.parquet")
    table = read_table(tmp_path / "runs.parquet")
    to = target()

    mapped = map_rows(table.frame, plan_for(table.frame, to), to, typed=table.typed)

    assert mapped.refused == []
    assert [result.values["throughput"] for result in mapped.results] == texts


def test_the_file_hash_is_of_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("batch_size,model_name,throughput\n1,llama-7b,1\n")
    (tmp_path / "b.csv").write_text("batch_size,model_name,throughput\n1,llama-7b,2\n")

    first, same, other = (read_table(tmp_path / n) for n in ("a.csv", "a.csv", "b.csv"))

    assert first.sha256 == same.sha256 != other.sha256
    assert len(first.sha256) == 64


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("runs.xlsx", "x", "not a file this command reads"),
        ("runs.csv", "batch_size,model_name,throughput\n", "holds no rows"),
        ("runs.parquet", "not parquet", "cannot be read as Parquet"),
        ("missing.csv", None, "no such file"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_sentence_naming_it(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(CliError, match=message) as raised:
        read_table(path)
    assert str(raised.value).startswith(str(path))
    assert "\n" not in str(raised.value)


def test_whole_numbers_beyond_two_to_the_53_in_parquet_are_read_exactly(
    tmp_path: Path, target: Target
) -> None:
    """An int64 column with a null, and a decimal(20, 0) column, went through float: 2^53 + 1
    was stored as 2^53 (and 20 as 20.0), another value than the same row from a CSV."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = 2**53 + 1
    table = pa.table(
        {
            "batch_size": pa.array([4, 8], pa.int64()),
            "model_name": ["llama-7b"] * 2,
            "throughput": pa.array([big, None], pa.int64()),
            "peak_memory": pa.array([Decimal(big), Decimal(20)], pa.decimal128(20, 0)),
        }
    )
    pq.write_table(table, tmp_path / "runs.parquet")
    frame = read_table(tmp_path / "runs.parquet").frame
    mapped = map_rows(frame, plan_for(frame, target()), target())

    values = [result.values for result in mapped.results]
    assert values == [{"throughput": big, "peak_memory": big}, {"peak_memory": 20}]
    assert all(type(v) is int for row in values for v in row.values())


def test_columns_without_a_name_are_ignored_and_zero_padded_whole_numbers_read(
    tmp_path: Path, target: Target
) -> None:
    """Two empty header cells ("a,b,,") refused the file as naming the column '' twice; a target
    cell 00000000000000000042 was 'beyond a 64-bit whole number'."""
    frame = csv(tmp_path, "batch_size,model_name,throughput,,\n4,llama-7b,00000000000000000042,,\n")
    [event] = events_of(frame, target())
    assert event.values == {"throughput": 42}


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("1e400", "'1e400' is too large for a number (a float holds about 1.8e308)"),
        ("-1e400", "'-1e400' is too large for a number (a float holds about 1.8e308)"),
        ("1e-400", "'1e-400' is too near 0 for a number (a float holds about 5e-324)"),
        (
            "1e-99999999999999999999",
            "'1e-99999999999999999999' is too near 0 for a number (a float holds about 5e-324)",
        ),
    ],
)
def test_a_number_no_float_holds_is_refused_as_written(text: str, sentence: str) -> None:
    """1e400 said 'inf is not a finite number' (the cell as read, not as written), 1e-400 was
    imported as 0.0; and a duration's refusal did not name its column."""
    with pytest.raises(CellError, match=re.escape(sentence)):
        target_value(text)
    with pytest.raises(CellError, match=re.escape(f"duration_seconds {sentence}")):
        duration(text)
    assert target_value("0e-400") == target_value("-0.00e-99999999999999999999") == 0.0
