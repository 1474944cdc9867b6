"""A space's entities as a table, built from folded rows (no ClickHouse)."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pandas as pd
import pytest

from discospace.core import (
    Entity,
    EntitySpace,
    ExperimentRef,
    ExperimentSpec,
    PropertySpec,
    SpaceSpec,
)
from discospace.core.canonical import canonical_json
from discospace.projector.errors import ViewError
from discospace.projector.exports import export
from discospace.projector.queries import MeasurementRow
from discospace.projector.spaces import SpaceLayout, observed_columns, space_states
from discospace.projector.view import (
    VIEWS,
    entity_table,
    in_causal_order,
    parse_include,
    whole_numbers_kept,
)

COLUMNS = [
    "entity_id",
    "model_name",
    "batch_size",
    "number_gpus",
    "train_tokens_per_second",
    "peak_gpu_memory_mib",
    "status",
    "reason",
]


def _layout(folded, space_id: str) -> SpaceLayout:
    state = next(s for s in space_states(folded.of("spaces")) if s.space_id == space_id)
    return SpaceLayout.of(state)


def _table(folded, space_id: str, include=VIEWS, limit=None) -> pd.DataFrame:
    layout = _layout(folded, space_id)
    measurements = [r for r in folded.of("measurements") if r.space_id == space_id]
    results = [
        r
        for r in folded.of("results")
        if r.sample_store == layout.sample_store and r.space_id != space_id
    ]
    return entity_table(layout, measurements, results, include, limit)


def _points(table: pd.DataFrame) -> list[dict]:
    return table[["model_name", "batch_size", "number_gpus"]].to_dict("records")


def test_the_measured_view_lists_valid_results_with_a_column_per_property(story, folded) -> None:
    table = _table(folded, story.space_a.space_id, ("measured",))
    assert list(table.columns) == COLUMNS
    assert _points(table) == story.valid_in_a
    best = table[table["batch_size"] == 2].iloc[0]
    assert (best["train_tokens_per_second"], best["peak_gpu_memory_mib"]) == (3000.5, 60000)
    assert set(table["status"]) == {"measured"}
    assert set(table["reason"]) == {""}


def test_a_space_sharing_the_store_sees_entities_measured_elsewhere(story, folded) -> None:
    table = _table(folded, story.space_a.space_id, ("elsewhere",))
    assert _points(table) == [story.measured_in_b]
    assert table.iloc[0]["train_tokens_per_second"] == 2000.0


def test_results_outside_the_space_or_in_another_store_are_not_elsewhere(story, folded) -> None:
    shown = _points(_table(folded, story.space_a.space_id))
    assert story.outside_a not in shown
    assert story.other_store in shown  # as never sampled, not with the other store's values
    row = _table(folded, story.space_a.space_id).set_index("batch_size").loc[8]
    other = row[(row["model_name"] == "granite-8b") & (row["number_gpus"] == 2)].iloc[0]
    assert other["status"] == "unsampled"
    assert math.isnan(other["train_tokens_per_second"])


def test_sampled_entities_without_a_valid_result_come_with_their_reasons(story, folded) -> None:
    table = _table(folded, story.space_a.space_id, ("unmeasured",))
    reasons = {
        (p["model_name"], p["batch_size"]): r
        for p, r in zip(_points(table), table.reason, strict=True)
    }
    assert reasons == {
        ("granite-8b", 8): "invalid: CUDA out of memory",
        ("granite-8b", 1): "failed (attempt 1): the image does not exist",
        ("granite-8b", 2): "requested, not measured yet (attempt 2)",
        ("granite-8b", 4): "requested, not measured yet (attempt 1)",
    }
    assert table["train_tokens_per_second"].isna().all()


def test_never_sampled_entities_are_the_rest_of_the_space_in_grid_order(story, folded) -> None:
    table = _table(folded, story.space_a.space_id, ("unsampled",))
    assert len(table) == 16 - 6 - 1
    assert set(table["status"]) == {"unsampled"}
    assert _points(table)[0] == {"model_name": "llama-7b", "batch_size": 1, "number_gpus": 1}


def test_without_a_limit_as_many_never_sampled_entities_are_listed_whatever_else_is_asked(
    story, folded, monkeypatch
) -> None:
    """The default cap counted every sampled entity, asked for or not: `include=unsampled`
    alone listed that many more never-sampled ones (1,300 instead of 1,000 with 300 sampled)."""
    monkeypatch.setattr("discospace.projector.view.DEFAULT_UNSAMPLED_LIMIT", 3)
    alone = _table(folded, story.space_a.space_id, ("unsampled",))
    whole = _table(folded, story.space_a.space_id)

    assert list(alone["status"]) == ["unsampled"] * 3
    assert (
        list(whole["status"])
        == ["measured"] * 2 + ["elsewhere"] + ["unmeasured"] * 4 + ["unsampled"] * 3
    )


def test_the_whole_space_lists_every_entity_once_in_view_order(story, folded) -> None:
    table = _table(folded, story.space_a.space_id)
    assert len(table) == 16
    assert table["entity_id"].is_unique
    assert (
        list(table["status"])
        == ["measured"] * 2 + ["elsewhere"] + ["unmeasured"] * 4 + ["unsampled"] * 9
    )


def test_a_result_reused_through_a_space_shows_as_measured_elsewhere(story, folded) -> None:
    table = _table(folded, story.space_b.space_id)
    by_status = {
        status: _points(table[table["status"] == status]) for status in ("measured", "elsewhere")
    }
    assert by_status["measured"] == [story.measured_in_b, story.outside_a]
    assert story.valid_in_a[0] in by_status["elsewhere"]
    reused = table[table["status"] == "elsewhere"].set_index("batch_size").loc[4]
    assert reused["train_tokens_per_second"] == 1000.0


def test_a_reused_result_is_elsewhere_even_when_the_store_lists_no_result_for_it(
    story, folded
) -> None:
    layout = _layout(folded, story.space_b.space_id)
    measurements = [r for r in folded.of("measurements") if r.space_id == layout.space_id]
    table = entity_table(layout, measurements, [], ("elsewhere",))
    assert _points(table) == [story.valid_in_a[0]]


def test_a_limit_caps_the_rows_in_view_order(story, folded) -> None:
    table = _table(folded, story.space_a.space_id, limit=3)
    assert list(table["status"]) == ["measured", "measured", "elsewhere"]


def test_an_empty_view_still_has_every_column(story, folded) -> None:
    table = _table(folded, story.space_a.space_id, limit=0)
    assert list(table.columns) == COLUMNS
    assert table.empty


def test_an_infinite_space_cannot_list_its_never_sampled_entities(story, folded) -> None:
    layout = _layout(folded, story.space_a.space_id)
    continuous = EntitySpace.from_specs([PropertySpec(name="learning_rate", range=(0.0, 1.0))])
    infinite = replace(layout, entity_space=continuous)
    with pytest.raises(ViewError, match="learning_rate has no finite domain"):
        entity_table(infinite, [], [], ("unsampled",))
    with pytest.raises(ViewError, match="learning_rate has no finite domain"):
        entity_table(infinite, [], [], ("unsampled",), limit=0)  # was [], as if all sampled
    assert entity_table(infinite, [], [], VIEWS).empty


@pytest.mark.parametrize(
    ("text", "views"),
    [
        ("all", VIEWS),
        ("measured", ("measured",)),
        ("unsampled,measured", ("measured", "unsampled")),
    ],
)
def test_include_names_views_in_view_order(text: str, views: tuple[str, ...]) -> None:
    assert parse_include(text) == views


@pytest.mark.parametrize("text", ["", "everything", "measured,all"])
def test_an_unknown_include_is_refused_with_the_choices(text: str) -> None:
    with pytest.raises(ViewError, match="is not one of measured, elsewhere, unmeasured"):
        parse_include(text)


def test_a_target_measured_by_two_experiments_is_named_by_observed_property_ids() -> None:
    columns = observed_columns(
        [("finetune", ("tps", "memory")), ("finetune-max_steps.10", ("tps", "energy"))],
        taken={"entity_id", "status", "reason", "batch_size"},
    )
    assert [c.name for c in columns] == [
        "finetune.tps",
        "memory",
        "finetune-max_steps.10.tps",
        "energy",
    ]
    assert columns[0].observed_id == "finetune.tps"


def test_a_target_named_like_a_property_is_named_by_its_observed_property_id() -> None:
    columns = observed_columns([("probe", ("batch_size",))], taken={"batch_size"})
    assert [c.name for c in columns] == ["probe.batch_size"]


def test_a_parameterized_experiment_gets_its_own_columns(story, folded) -> None:
    refs = (
        ExperimentRef(actuator="SFTTrainer", experiment="finetune"),
        ExperimentRef(
            actuator="SFTTrainer", experiment="finetune", parameterization={"max_steps": 10}
        ),
    )
    spec = SpaceSpec(
        sample_store="s",
        entity_space=story.space_a.spec.entity_space,
        measurement_space=refs,
    )
    state = next(iter(space_states(folded.of("spaces"))))
    layout = SpaceLayout.of(replace(state, spec=spec, space_id="space-x"))
    assert [c.name for c in layout.observed] == [
        "finetune.train_tokens_per_second",
        "finetune.peak_gpu_memory_mib",
        "finetune-max_steps.10.train_tokens_per_second",
        "finetune-max_steps.10.peak_gpu_memory_mib",
    ]


def _row(operation: str, kind: str, attempt: int, event_id: str) -> MeasurementRow:
    return MeasurementRow(
        space_id="space-1",
        operation_id=operation,
        entity_id="e1",
        experiment_id="x",
        event_id=event_id,
        kind=kind,
        request_id="r1",
        sample_store="s",
        occurred_at=datetime(2026, 11, 21, tzinfo=UTC),
        attempt=attempt,
        is_valid=True if kind == "completed" else None,
        reason="",
        retryable=False,
        values="{}",
        entity_values="{}",
    )


def test_a_start_within_the_same_millisecond_as_its_result_is_read_before_it() -> None:
    # Same timestamp: the table orders these by event id, which may put the start last.
    rows = [
        _row("op-1", "failed", 1, "a"),
        _row("op-1", "completed", 2, "b"),
        _row("op-1", "started", 2, "c"),
        _row("op-1", "requested", 2, "d"),
        _row("op-2", "reused", 1, "e"),
        _row("op-1", "started", 1, "f"),
    ]

    ordered = [(r.operation_id, r.attempt, r.kind) for r in in_causal_order(rows)]

    assert ordered == [
        ("op-1", 1, "started"),
        ("op-1", 1, "failed"),
        ("op-1", 2, "requested"),
        ("op-1", 2, "started"),
        ("op-1", 2, "completed"),
        ("op-2", 1, "reused"),
    ]


def _completed(layout: SpaceLayout, entity: Entity, event_id: str) -> MeasurementRow:
    return _row("op-1", "completed", 1, event_id)._replace(
        entity_id=entity.id,
        experiment_id=layout.experiment_ids[0],
        values='{"train_tokens_per_second": 1.5}',
        entity_values=canonical_json(entity.as_dict()),
    )


def _walked_never(space: EntitySpace) -> Iterator[Entity]:
    raise AssertionError("the space was walked to find its never-sampled entities")
    yield from space.sequential()


def test_a_space_sampled_in_full_is_not_walked_for_never_sampled_entities(story, folded) -> None:
    layout = _layout(folded, story.space_a.space_id)
    small = EntitySpace.from_specs(
        [
            PropertySpec(name="model_name", values=("m",)),
            PropertySpec(name="batch_size", values=(1, 2)),
            PropertySpec(name="number_gpus", values=(1,)),
        ]
    )
    layout = replace(layout, entity_space=small)
    entities = list(small.sequential())
    rows = [_completed(layout, entity, f"c{i}") for i, entity in enumerate(entities)]

    table = entity_table(layout, rows, [], VIEWS, grid=_walked_never(small))
    assert list(table["status"]) == ["measured", "measured"]
    assert list(table["batch_size"]) == [1, 2]

    # One entity short of the whole space: the space is walked, the missing one listed.
    table = entity_table(layout, rows[:1], [], VIEWS)
    assert list(table["status"]) == ["measured", "unsampled"]
    assert list(table["entity_id"]) == [entities[0].id, entities[1].id]


def test_a_column_of_whole_numbers_with_gaps_stays_whole_numbers(story, folded) -> None:
    """pandas makes a column with a gap floats: 60000 was exported as 60000.0."""
    table = _table(folded, story.space_a.space_id)
    memory = table["peak_gpu_memory_mib"]
    assert memory.isna().any()  # the unmeasured and unsampled rows
    assert str(memory.dtype) == "Int64"
    assert ",60000,measured," in export(table, "csv").decode()
    assert {row["peak_gpu_memory_mib"] for row in json.loads(export(table, "json"))} == {
        60000,
        None,
    }
    assert table["train_tokens_per_second"].dtype == "float64"  # real numbers stay real


def test_whole_numbers_beyond_two_to_the_53_keep_every_digit() -> None:
    rows = [{"n": 2**53 + 1, "big": 2**70}, {"n": None, "big": None}]
    table = whole_numbers_kept(pd.DataFrame(rows, columns=["n", "big"]), rows)
    assert table["n"].tolist()[0] == 2**53 + 1
    assert table["big"].tolist()[0] == 2**70
    assert json.loads(export(table, "json"))[0] == {"n": 2**53 + 1, "big": 2**70}
    assert export(table, "csv").decode().splitlines()[1] == f"{2**53 + 1},{2**70}"
    parquet = pd.read_parquet(io.BytesIO(export(table, "parquet")))
    assert parquet["n"].tolist()[0] == 2**53 + 1
    assert parquet["big"][0] == str(2**70)  # Parquet's integers hold 64 bits: text
    assert parquet["big"].isna()[1]


def test_a_whole_number_beyond_two_to_the_53_beside_fractions_keeps_every_digit() -> None:
    """A target column that holds 2^53 + 1 and 0.5: pandas made it float64, so the export
    wrote 9007199254740992.0."""
    rows = [{"x": 2**53 + 1, "k": 1}, {"x": 0.5, "k": 2}, {"x": None, "k": 3}, {"x": 3, "k": 4}]
    table = whole_numbers_kept(pd.DataFrame(rows, columns=["x", "k"]), rows)
    assert table["x"].tolist()[:2] == [2**53 + 1, 0.5]
    assert [row["x"] for row in json.loads(export(table, "json"))] == [2**53 + 1, 0.5, None, 3]
    csv = [line.split(",")[0] for line in export(table, "csv").decode().splitlines()[1:]]
    assert csv == [f"{2**53 + 1}", "0.5", "", "3"]
    parquet = pd.read_parquet(io.BytesIO(export(table, "parquet")))
    assert parquet["x"].isna().tolist() == [False, False, True, False]
    assert parquet["x"].dropna().tolist() == [str(2**53 + 1), "0.5", "3"]  # one type: text
    small = [{"x": 2**53}, {"x": 0.5}]  # every value a float holds exactly: numbers
    assert whole_numbers_kept(pd.DataFrame(small, columns=["x"]), small)["x"].dtype == "float64"


SAMPLED = ("measured", "elsewhere", "unmeasured")


def _with_second(story, folded, name: str, target: str, required: str) -> SpaceLayout:
    """The story's space measured by finetune and a second experiment `name` of the same
    actuator (`target`, requiring `required`)."""
    refs = (
        ExperimentRef(actuator="SFTTrainer", experiment="finetune"),
        ExperimentRef(actuator="SFTTrainer", experiment=name),
    )
    spec = SpaceSpec(
        sample_store="s", entity_space=story.space_a.spec.entity_space, measurement_space=refs
    )
    state = next(iter(space_states(folded.of("spaces"))))
    second = ExperimentSpec(
        actuator="SFTTrainer",
        experiment=name,
        target_properties=(target,),
        required_properties=(required,),
    )
    experiments = (*state.experiments, second)
    return SpaceLayout.of(replace(state, spec=spec, space_id="space-1", experiments=experiments))


def _two_experiment_layout(story, folded) -> SpaceLayout:
    return _with_second(story, folded, "infer", "latency_ms", "batch_size")


def _answer(layout: SpaceLayout, kind: str, experiment: str, values: str, **more) -> MeasurementRow:
    entity = next(iter(layout.entity_space.sequential()))
    return _row("op-1", kind, 1, f"{kind}-{experiment}")._replace(
        entity_id=entity.id,
        experiment_id=experiment,
        values=values,
        entity_values=canonical_json(entity.as_dict()),
        **more,
    )


def test_a_measured_row_shows_the_result_its_operation_reused_for_another_experiment(
    story, folded
) -> None:
    """The operation measured `finetune` and reused `infer` from another space: both are its
    results (`/operation/results` lists both), so its row shows both."""
    layout = _two_experiment_layout(story, folded)
    rows = [
        _answer(layout, "completed", "finetune", '{"train_tokens_per_second": 100.0}'),
        _answer(layout, "reused", "infer", '{"latency_ms": 11.0}', is_valid=True),
    ]

    table = entity_table(layout, rows, [], SAMPLED)

    [row] = table.to_dict("records")
    assert (row["status"], row["train_tokens_per_second"], row["latency_ms"]) == (
        "measured",
        100.0,
        11.0,
    )
    assert row["reason"] == ""


def test_a_row_found_elsewhere_says_why_this_space_has_no_valid_result(story, folded) -> None:
    layout = _two_experiment_layout(story, folded)
    rows = [
        _answer(layout, "completed", "finetune", "{}", is_valid=False, reason="CUDA out of memory"),
        _answer(layout, "reused", "infer", '{"latency_ms": 11.0}', is_valid=True),
    ]

    [row] = entity_table(layout, rows, [], SAMPLED).to_dict("records")

    assert (row["status"], row["latency_ms"]) == ("elsewhere", 11.0)
    assert row["reason"] == "finetune: invalid: CUDA out of memory"


def _dependent_layout(story, folded) -> SpaceLayout:
    """finetune, and `energy`, which reads finetune's train_tokens_per_second."""
    return _with_second(
        story, folded, "energy", "joules_per_token", "finetune.train_tokens_per_second"
    )


def test_a_dependent_experiment_never_run_says_why(story, folded) -> None:
    """The explorer never requests `energy` where `finetune` measured no tokens per second
    or gave no valid result: the view showed its cell empty with no reason."""
    layout = _dependent_layout(story, folded)
    lacking = [_answer(layout, "completed", "finetune", '{"peak_gpu_memory_mib": 10}')]
    invalid = [_answer(layout, "completed", "finetune", "{}", is_valid=False, reason="OOM")]
    running = [_answer(layout, "requested", "finetune", "{}")]

    [row] = entity_table(layout, lacking, [], SAMPLED).to_dict("records")
    assert (row["status"], row["reason"]) == (
        "measured",
        "energy: not run: 'finetune' measured no 'train_tokens_per_second'",
    )
    [row] = entity_table(layout, invalid, [], SAMPLED).to_dict("records")
    assert row["reason"] == (
        "finetune: invalid: OOM; energy: not run: 'finetune' gave no valid result"
    )
    [row] = entity_table(layout, running, [], SAMPLED).to_dict("records")
    assert row["reason"] == "finetune: requested, not measured yet (attempt 1)"
