"""The pipeline spec: its shape, the order jobs run in, and references between jobs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from discospace.core.errors import PipelineError
from discospace.core.pipelines import (
    STAGES,
    PipelineSpec,
    Reference,
    TrialObjective,
    job_references,
    ordered_jobs,
    parse_pipeline,
    read_jobs,
    references,
    resolve,
    trial_space,
)
from discospace.core.spec import PropertySpec, SpaceSpec

HARDWARE: dict[str, Any] = {
    "stages": {
        "evaluate": [
            {"name": "best", "kind": "hook", "hook": "top_k", "args": {"job": "search", "k": 3}},
            {
                "name": "longer",
                "kind": "measure",
                "entities": "${best.entities}",
                "experiment": {
                    "actuator": "cpu_train",
                    "experiment": "train",
                    "parameterization": {"duration": "10sec"},
                },
            },
        ],
        "probe": [
            {
                "name": "probe",
                "kind": "operation",
                "operator": "random_walk",
                "parameters": {"number_entities": 8, "seed": 3},
            }
        ],
        "refine": [
            {"name": "pruned", "kind": "hook", "hook": "prune_invalid", "args": {"job": "probe"}},
            {
                "name": "narrowed",
                "kind": "hook",
                "hook": "k_sigma",
                "args": {"job": "probe", "space": "${pruned.space_id}", "k": 2},
            },
        ],
        "execute": [
            {
                "name": "search",
                "kind": "operation",
                "space": "${narrowed.space_id}",
                "operator": "optuna_tpe",
                "parameters": {"number_entities": 10},
            }
        ],
    }
}


def test_jobs_run_stage_after_stage_whatever_order_the_stages_are_written_in() -> None:
    spec = PipelineSpec.model_validate(HARDWARE)

    order = [(stage, job.name) for stage, job in ordered_jobs(spec)]

    assert order == [
        ("probe", "probe"),
        ("refine", "pruned"),
        ("refine", "narrowed"),
        ("execute", "search"),
        ("evaluate", "best"),
        ("evaluate", "longer"),
    ]
    assert STAGES == ("probe", "refine", "execute", "evaluate")


def test_every_stage_is_optional_but_a_pipeline_needs_a_job() -> None:
    only_probe = {"stages": {"probe": HARDWARE["stages"]["probe"]}}
    assert [job.name for _, job in ordered_jobs(PipelineSpec.model_validate(only_probe))] == [
        "probe"
    ]
    with pytest.raises(PipelineError, match="the pipeline has no job"):
        parse_pipeline({"stages": {}})


def test_a_job_name_is_unique_in_the_pipeline_not_only_in_its_stage() -> None:
    twice = {
        "stages": {"probe": HARDWARE["stages"]["probe"], "execute": HARDWARE["stages"]["probe"]}
    }
    with pytest.raises(PipelineError, match="job name 'probe' is used twice"):
        parse_pipeline(twice)


@pytest.mark.parametrize("name", ["1st", "a.b", "", "x" * 65, "with space"])
def test_a_job_name_that_cannot_be_read_in_a_reference_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="job name"):
        PipelineSpec.model_validate(
            {"stages": {"probe": [{"name": name, "kind": "hook", "hook": "top_k"}]}}
        )


@pytest.mark.parametrize("name", ["trial", "trial-3"])
def test_the_names_trials_use_are_reserved(name: str) -> None:
    with pytest.raises(PipelineError, match="reserved for trials"):
        parse_pipeline({"stages": {"probe": [{"name": name, "kind": "hook", "hook": "top_k"}]}})


@pytest.mark.parametrize(
    ("job", "problem"),
    [
        ({"kind": "operation"}, "operation job 'j' needs operator"),
        ({"kind": "measure", "entities": [{"a": 1}]}, "measure job 'j' needs experiment"),
        (
            {"kind": "measure", "experiment": {"actuator": "a", "experiment": "e"}},
            "measure job 'j' needs entities",
        ),
        ({"kind": "hook"}, "hook job 'j' needs hook"),
        ({"kind": "hook", "hook": "top_k", "operator": "x"}, "hook job 'j' takes no operator"),
        ({"kind": "hook", "hook": "top_k", "space": "s"}, "takes no space .give the space as args"),
        ({"kind": "operation", "operator": "x", "args": {"k": 1}}, "takes no args"),
        (
            {
                "kind": "measure",
                "entities": "best.entities",
                "experiment": {"actuator": "a", "experiment": "e"},
            },
            "give a list of entities or one reference",
        ),
    ],
)
def test_a_job_of_the_wrong_shape_for_its_kind_is_refused_with_one_sentence(
    job: dict[str, Any], problem: str
) -> None:
    with pytest.raises(PipelineError, match=problem):
        parse_pipeline({"stages": {"probe": [{"name": "j", **job}]}})


def test_an_unknown_field_is_named_with_where_it_is() -> None:
    with pytest.raises(
        PipelineError,
        match=r"^pipeline: stages.probe\[0\] \(job 'j'\).extra: is not a known field$",
    ):
        parse_pipeline(
            {"stages": {"probe": [{"name": "j", "kind": "hook", "hook": "h", "extra": 1}]}}
        )


def test_trials_read_min_and_max_as_the_directions_operations_use() -> None:
    objective = TrialObjective(job="eval", property="loss", direction="min")
    assert objective.direction == "minimize"
    assert objective.objective().direction == "min"
    assert TrialObjective(job="e", property="acc", direction="maximize").objective().better(2, 1)


def test_references_are_found_in_strings_however_deep() -> None:
    value = {"a": ["x ${probe.space_id} y", {"b": "${best.entities.0}"}], "c": 3, "d": None}

    assert references(value) == [
        Reference("probe", ("space_id",)),
        Reference("best", ("entities", "0")),
    ]
    assert references("no reference, $ {x.y}, {x.y}") == []


@pytest.mark.parametrize("text", ["${}", "${probe}", "${probe.}", "${.x}", "${a b.c}"])
def test_a_malformed_reference_is_refused(text: str) -> None:
    with pytest.raises(PipelineError, match="is not of the form"):
        references(text)


def test_a_job_reads_the_jobs_its_references_and_a_hooks_job_argument_name() -> None:
    spec = PipelineSpec.model_validate(HARDWARE)
    jobs = {job.name: job for _, job in ordered_jobs(spec)}

    assert read_jobs(jobs["narrowed"]) == ["pruned", "probe"]
    assert read_jobs(jobs["longer"]) == ["best"]
    assert read_jobs(jobs["probe"]) == []
    assert job_references(jobs["search"]) == [Reference("narrowed", ("space_id",))]


RESULTS = {
    "narrowed": {"space_id": "space-77aa01c2e3f4", "narrowed": {"batch_size": [4, 16]}},
    "best": {"entities": [{"batch_size": 4}, {"batch_size": 16}], "values": [2.5, 3.0]},
}


def test_a_whole_reference_takes_the_json_value_it_names() -> None:
    assert resolve("${best.entities}", RESULTS, None) == [{"batch_size": 4}, {"batch_size": 16}]
    assert resolve("${narrowed.narrowed.batch_size.1}", RESULTS, None) == 16
    assert resolve({"space": "${narrowed.space_id}", "k": 3}, RESULTS, None) == {
        "space": "space-77aa01c2e3f4",
        "k": 3,
    }


def test_references_inside_a_longer_string_are_formatted_into_it() -> None:
    text = "on ${narrowed.space_id} with ${best.values} and lr=${trial.lr}"

    resolved = resolve(text, RESULTS, {"lr": 0.001})

    assert resolved == "on space-77aa01c2e3f4 with [2.5,3.0] and lr=0.001"


def test_a_trial_reference_takes_the_trials_value() -> None:
    assert resolve(["${trial.min_len}"], {}, {"min_len": 20}) == [20]


@pytest.mark.parametrize(
    ("value", "trial", "problem"),
    [
        ("${search.top_k}", None, "names job 'search', which has no result yet"),
        ("${best.top_k}", None, r"the result of job 'best' has no 'top_k'"),
        ("${best.entities.7}", None, r"has no 'entities.7'"),
        ("${best.values.0.x}", None, r"has no 'values.0.x'"),
        ("${trial.lr}", None, "outside trials"),
        ("${trial.lr}", {"bs": 4}, r"names no property of the trial \(it has bs\)"),
    ],
)
def test_a_reference_to_nothing_is_one_sentence(
    value: str, trial: dict[str, Any] | None, problem: str
) -> None:
    with pytest.raises(PipelineError, match=problem):
        resolve(value, RESULTS, trial)


def test_a_trials_space_fixes_the_trials_properties_and_keeps_the_others() -> None:
    space = SpaceSpec(
        sample_store="s",
        entity_space=(
            PropertySpec(name="lr", range=(0.0001, 0.01)),
            PropertySpec(name="bs", values=(4, 8)),
        ),
        measurement_space=(),
    )

    fixed = trial_space(space, {"lr": 0.003})

    assert fixed.entity_space == (PropertySpec(name="lr", values=(0.003,)), space.entity_space[1])
