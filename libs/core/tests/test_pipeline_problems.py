"""pipeline_problem: every malformed pipeline is one sentence, before anything is stored."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from discospace.core import DiscoverySpace, ExperimentCatalog
from discospace.core.pipelines import COUNT_KEYS, hook_names, pipeline_problem
from discospace.core.results import Objective
from discospace.core.spec import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec

SPACE = SpaceSpec(
    sample_store="hw",
    entity_space=(
        PropertySpec(name="model_size", values=("tiny", "small", "medium")),
        PropertySpec(name="batch_size", values=(1, 4, 16, 64)),
        PropertySpec(name="lr", range=(0.0001, 0.01)),
    ),
    measurement_space=(
        ExperimentRef(
            actuator="cpu_train", experiment="train", parameterization={"duration": "2sec"}
        ),
    ),
)
SPACE_ID = DiscoverySpace.from_spec(SPACE).id
CATALOG = ExperimentCatalog(
    [
        ExperimentSpec(
            actuator="cpu_train",
            experiment="train",
            target_properties=("tps",),
            required_properties=("model_size", "batch_size", "lr"),
            optional_properties={"duration": "2sec"},
        )
    ]
)
HOOKS = ("k_sigma", "prune_invalid", "top_k")

GOOD: dict[str, Any] = {
    "stages": {
        "probe": [
            {"name": "probe", "kind": "operation", "operator": "random_walk"},
        ],
        "refine": [
            {"name": "pruned", "kind": "hook", "hook": "prune_invalid", "args": {"job": "probe"}},
            {
                "name": "narrowed",
                "kind": "hook",
                "hook": "k_sigma",
                "args": {"job": "probe", "space": "${pruned.space_id}"},
            },
        ],
        "execute": [
            {
                "name": "search",
                "kind": "operation",
                "space": "${narrowed.space_id}",
                "operator": "optuna_tpe",
                "parameters": {"objective": {"property": "tps", "direction": "max"}},
            }
        ],
        "evaluate": [
            {
                "name": "best",
                "kind": "hook",
                "hook": "top_k",
                "args": {"job": "search", "k": 3, "objective": {"property": "tps"}},
            },
            {
                "name": "longer",
                "kind": "measure",
                "space": "${narrowed.space_id}",
                "entities": "${best.entities}",
                "experiment": {
                    "actuator": "cpu_train",
                    "experiment": "train",
                    "parameterization": {"duration": "10sec"},
                },
            },
        ],
    },
    "trials": {
        "count": 4,
        "over": {"batch_size": {"values": [4, 16]}, "lr": {"range": [0.001, 0.005]}},
        "objective": {"job": "longer", "property": "tps", "direction": "max"},
    },
}


def changed(path: str, value: Any) -> dict[str, Any]:
    """GOOD with the item at a dotted path (list items by index) replaced by `value`."""
    options = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node: Any = options
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return options


def problem(options: dict[str, Any], **kwargs: Any) -> str | None:
    return pipeline_problem(options, SPACE, HOOKS, **kwargs)


def test_a_well_formed_pipeline_has_no_problem() -> None:
    assert problem(GOOD) is None
    assert problem(GOOD, catalog=CATALOG, operators=("random_walk", "optuna_tpe")) is None
    assert pipeline_problem(GOOD, DiscoverySpace.from_spec(SPACE), hook_names()) is None


def test_an_unknown_hook_is_refused() -> None:
    options = changed("stages.refine.1.hook", "k_sigmaa")

    assert problem(options) == (
        "hook job 'narrowed' uses hook 'k_sigmaa', which is not known: "
        "use k_sigma, prune_invalid, top_k"
    )


def test_a_reference_to_a_job_that_does_not_exist_is_refused() -> None:
    options = changed("stages.execute.0.space", "${narowed.space_id}")

    assert problem(options) == "job 'search' reads job 'narowed', which does not exist"


def test_a_hook_reading_a_job_that_does_not_exist_is_refused() -> None:
    options = changed("stages.evaluate.0.args", {"job": "serach", "k": 3})

    assert problem(options) == "job 'best' reads job 'serach', which does not exist"


def test_a_job_reading_itself_is_a_cycle() -> None:
    options = changed("stages.execute.0.parameters", {"seed": "${search.seed}"})

    assert problem(options) == "job 'search' reads its own result: a cycle"


def test_two_jobs_reading_each_other_are_a_cycle() -> None:
    options = changed("stages.probe.0.space", "${search.space_id}")

    assert problem(options) == "job 'probe' reads job 'search', which reads 'probe' back: a cycle"


def test_a_job_reading_a_later_job_is_refused() -> None:
    options = {
        "stages": {
            "probe": [
                {
                    "name": "walk",
                    "kind": "operation",
                    "operator": "random_walk",
                    "space": "${grid.x}",
                }
            ],
            "execute": [{"name": "grid", "kind": "operation", "operator": "random_walk"}],
        }
    }

    assert problem(options) == (
        "job 'walk' reads job 'grid', which runs after it: a job reads earlier jobs only"
    )


def test_a_job_reading_a_later_job_that_depends_on_it_is_a_cycle() -> None:
    # best -> search -> narrowed -> pruned: pruned reading best closes the loop.
    options = changed("stages.refine.0.args", {"job": "probe", "k": "${best.values.0}"})

    assert problem(options) == "job 'pruned' reads job 'best', which reads 'pruned' back: a cycle"


def test_a_malformed_reference_is_refused() -> None:
    options = changed("stages.execute.0.space", "${narrowed}")

    assert problem(options) == (
        "reference ${narrowed} is not of the form ${<job>.<key>} (or ${trial.<property>})"
    )


def test_a_measure_job_on_an_experiment_the_space_does_not_have_is_refused() -> None:
    options = changed(
        "stages.evaluate.1.experiment", {"actuator": "gpu_train", "experiment": "train"}
    )

    assert problem(options) == (
        f"measure job 'longer' uses experiment 'train' of actuator 'gpu_train', which space "
        f"'{SPACE_ID}' does not measure: use train (cpu_train)"
    )


def test_a_measure_job_with_a_parameter_the_experiment_does_not_take_is_refused() -> None:
    longer = {"actuator": "cpu_train", "experiment": "train", "parameterization": {"epochs": 3}}
    options = changed("stages.evaluate.1.experiment", longer)

    assert problem(options) is None  # without the catalog, only the experiment is known
    assert problem(options, catalog=CATALOG) == (
        "measure job 'longer': experiment 'train' has no optional property 'epochs' to parameterize"
    )


def test_a_measure_job_on_a_dependent_experiment_is_refused_before_anything_runs() -> None:
    """A measure job's space measures its experiment alone: `energy` reads `train.tps`, which
    that space never measures. The registry refused the job's space after the probe had spent
    its measurements, and the pipeline failed there."""
    energy = ExperimentSpec(
        actuator="cpu_train",
        experiment="energy",
        target_properties=("joules",),
        required_properties=("model_size", "train.tps"),
    )
    catalog = ExperimentCatalog([*CATALOG, energy])
    space = SPACE.model_copy(
        update={
            "measurement_space": (
                *SPACE.measurement_space,
                ExperimentRef(actuator="cpu_train", experiment="energy"),
            )
        }
    )
    on_energy = changed(
        "stages.evaluate.1.experiment", {"actuator": "cpu_train", "experiment": "energy"}
    )

    assert pipeline_problem(on_energy, space, HOOKS, catalog) == (
        "measure job 'longer' uses experiment 'energy', which reads train.tps from other "
        "experiments, and a measure job measures its experiment alone: measure the space with "
        "an operation job (every experiment of the space, in dependency order)"
    )


def test_a_measure_job_listing_an_entity_outside_the_space_is_refused() -> None:
    entities = [{"model_size": "tiny", "batch_size": 4, "lr": 0.001}, {"model_size": "huge"}]
    options = changed("stages.evaluate.1.entities", entities)

    assert problem(options) == (
        f"measure job 'longer': entity 2 is not in space '{SPACE_ID}': property 'model_size' "
        "has the value huge, which is not in its domain [tiny, small, medium]"
    )


def test_a_measure_job_on_another_registered_space_is_left_to_the_explorer() -> None:
    elsewhere = changed("stages.evaluate.1.space", "space-000000000000")
    other = changed("stages.evaluate.1.experiment", {"actuator": "gpu_train", "experiment": "x"})

    assert problem(elsewhere) is None
    assert problem(other) is not None


def test_trials_over_a_property_the_space_does_not_have_are_refused() -> None:
    options = changed("trials.over", {"batch_sise": {"values": [4, 16]}})

    assert problem(options) == (
        f"trials are over 'batch_sise', which space '{SPACE_ID}' does not have: it has "
        "model_size, batch_size, lr"
    )


def test_trials_over_values_outside_the_spaces_domain_are_refused() -> None:
    options = changed("trials.over", {"batch_size": {"values": [4, 32]}})

    assert problem(options) == (
        f"trials over 'batch_size' give [4, 32], which is not within its domain [1, 4, 16, 64] "
        f"in space '{SPACE_ID}'"
    )


def test_trials_over_an_ill_formed_domain_are_refused() -> None:
    options = changed("trials.over", {"lr": {"range": [0.01, 0.001]}})

    assert problem(options) == (
        "trials over 'lr': property 'lr' has a range whose low (0.01) is not below its high (0.001)"
    )


def test_a_trials_objective_on_a_job_that_does_not_exist_is_refused() -> None:
    options = changed("trials.objective", {"job": "evaluate", "property": "tps"})

    assert problem(options) == "the trials' objective reads job 'evaluate', which does not exist"


def test_a_trial_reference_outside_trials_or_to_another_property_is_refused() -> None:
    seeded = changed("stages.probe.0.parameters", {"seed": "${trial.seed}"})
    no_trials = {"stages": seeded["stages"]}

    assert problem(seeded) == (
        "job 'probe' reads ${trial.seed}, but the trials are over batch_size, lr only"
    )
    assert problem(no_trials) == "job 'probe' reads ${trial.seed}, but the pipeline has no trials"
    assert problem(changed("stages.probe.0.parameters", {"seed": "${trial.lr}"})) is None


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        ({"stages": {}}, "the pipeline has no job: give at least one in stages"),
        ({}, "pipeline: stages: is required"),
        ({"stages": {"probe": "walk"}}, "pipeline: stages.probe: should be a list"),
        ({"stages": 5}, "pipeline: stages: should be a mapping of fields"),
        ({"stages": {"later": []}}, "pipeline: stages.later: is not a known field"),
        (changed("stages.probe.0.kind", "walk"), "pipeline: stages.probe[0] (job 'probe').kind: "),
        (
            changed("stages.probe.0", {"name": "probe", "kind": "operation"}),
            "operation job 'probe' needs operator",
        ),
        (changed("stages.evaluate.1.entities", None), "measure job 'longer' needs entities"),
        (changed("stages.refine.0.hook", None), "hook job 'pruned' needs hook"),
        (changed("trials.count", 0), "pipeline: trials.count: input should be greater than 0"),
        (
            changed("trials.count", 10**6),
            "pipeline: trials.count: input should be less than or equal to 1000",
        ),
        (changed("trials.optimizer", "grid"), "pipeline: trials.optimizer: input should be"),
        (changed("stages.refine.1.name", "probe"), "job name 'probe' is used twice"),
    ],
)
def test_a_pipeline_of_the_wrong_shape_is_one_sentence(options: Any, sentence: str) -> None:
    found = problem(options)

    assert found is not None
    assert found.startswith(sentence), found
    assert "\n" not in found


def test_an_operation_job_with_an_operator_the_explorer_does_not_run_is_refused() -> None:
    options = changed("stages.probe.0.operator", "random_wlak")

    assert problem(options) is None  # operators are checked only when they are given
    assert problem(options, operators=("optuna_tpe", "random_walk")) == (
        "operation job 'probe': operator 'random_wlak' is not known: use optuna_tpe, random_walk"
    )


def test_a_listed_entity_holding_a_reference_is_checked_once_replaced_not_at_the_door() -> None:
    entities = [{"model_size": "tiny", "batch_size": "${trial.batch_size}", "lr": 0.002}]
    options = changed("stages.evaluate.1.entities", entities)
    options["stages"]["evaluate"][1]["space"] = SPACE_ID
    outside = changed("stages.evaluate.1.entities", [{**entities[0], "batch_size": 3}])
    outside["stages"]["evaluate"][1]["space"] = SPACE_ID

    assert problem(options) is None
    found = problem(outside)
    assert found is not None
    assert found.startswith(f"measure job 'longer': entity 1 is not in space '{SPACE_ID}': ")


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (
            {"job": "probe", "k": "wide"},
            "hook job 'narrowed': hook 'k_sigma' args: k: input should be a valid number",
        ),
        ({"job": "probe", "kk": 1}, "hook job 'narrowed': hook 'k_sigma' args: kk: is not a known"),
    ],
)
def test_args_a_shipped_hook_would_refuse_are_refused_before_the_probe_runs(
    args: dict[str, Any], sentence: str
) -> None:
    found = problem(changed("stages.refine.1.args", args))

    assert found is not None
    assert found.startswith(sentence), found


def test_hook_args_holding_a_reference_are_checked_once_it_is_replaced() -> None:
    assert problem(changed("stages.refine.1.args", {"job": "probe", "k": "${trial.lr}"})) is None


def test_a_trials_objective_its_job_does_not_measure_is_refused_before_any_trial() -> None:
    misspelt = changed("trials.objective.property", "tsp")
    observed = changed("trials.objective.property", "train.tps")

    assert problem(misspelt) is None  # without the catalog, targets are unknown
    assert problem(misspelt, catalog=CATALOG) == (
        "the trials' objective 'tsp' is no target job 'longer' measures: its targets are tps"
    )
    assert problem(observed, catalog=CATALOG) is None


def test_a_job_whose_child_would_take_the_id_of_a_nested_pipelines_child_is_refused() -> None:
    walk = {"kind": "operation", "operator": "random_walk"}
    nested = {"options": {"stages": {"probe": [{"name": "y", **walk}]}}}
    options = {
        "stages": {
            "probe": [
                {"name": "x", "kind": "operation", "operator": "pipeline", "parameters": nested}
            ],
            "execute": [{"name": "x-y", **walk}],
        }
    }
    apart = copy.deepcopy(options)
    apart["stages"]["execute"][0]["name"] = "x_y"

    assert problem(options) == (
        "job 'y' of job 'x' and job 'x-y' would both run as child operation '<pipeline>-x-y': "
        "rename one"
    )
    assert problem(apart) is None


def test_a_reference_to_a_key_its_jobs_result_will_not_have_is_refused() -> None:
    options = changed("stages.execute.0.space", "${narrowed.spaceid}")
    plugin = changed("stages.refine.1.hook", "my_hook")

    assert problem(options) == (
        "job 'search' reads ${narrowed.spaceid}, but the result of job 'narrowed' has no "
        "'spaceid': it has space, narrowed, space_id"
    )
    plugin["stages"]["execute"][0]["space"] = "${narrowed.anything}"  # only running it tells
    assert pipeline_problem(plugin, SPACE, (*HOOKS, "my_hook")) is None


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (
            {"job": "probe", "space": "${pruned.space_id}", "good_fration": 0.5},
            "hook job 'narrowed': hook 'k_sigma' args: good_fration: is not a known",
        ),
        (
            {"job": "probe", "space": "${pruned.space_id}", "k": "wide"},
            "hook job 'narrowed': hook 'k_sigma' args: k: input should be a valid number",
        ),
        (
            {"job": "probe", "space": "${pruned.space_id}", "good_fraction": "${probe.x}"},
            None,
        ),
    ],
    ids=["misspelt-beside-a-reference", "wrong-beside-a-reference", "the-reference-itself"],
)
def test_args_beside_a_reference_are_checked_at_the_door(
    args: dict[str, Any], sentence: str | None
) -> None:
    """The shipped examples' k_sigma job reads `${pruned.space_id}`: its other args were left
    unchecked until it ran, after the probe had measured."""
    found = problem(changed("stages.refine.1.args", args))

    if sentence is None:
        assert found is not None  # the probe's result has no 'x'
        assert "has no 'x'" in found
    else:
        assert found is not None
        assert found.startswith(sentence), found


@pytest.mark.parametrize(
    ("path", "value", "sentence"),
    [
        (
            "stages.refine.1.args",
            {"job": "probe", "properties": ["batch_sise"]},
            "hook job 'narrowed': k_sigma cannot narrow 'batch_sise': the space has no such "
            "property",
        ),
        (
            "stages.refine.1.args",
            {"job": "probe", "properties": ["model_size"]},
            "hook job 'narrowed': k_sigma narrows numeric properties only, not 'model_size'",
        ),
        (
            "stages.refine.1.args",
            {"job": "pruned"},
            "hook job 'narrowed' reads the measurements of job 'pruned', a hook job, which "
            "measures nothing: name an operation or measure job",
        ),
        (
            "stages.evaluate.0.args",
            {"job": "search", "k": 3, "objective": {"property": "loss"}},
            f"hook job 'best' ranks by 'loss', which no experiment of space '{SPACE_ID}' "
            "measures: its targets are tps",
        ),
    ],
    ids=["missing-property", "categorical-property", "reads-a-hook", "unmeasured-objective"],
)
def test_hook_args_naming_what_the_space_lacks_are_refused_at_the_door(
    path: str, value: Any, sentence: str
) -> None:
    """Each was found when the hook ran, after the probe's measurements (with trials, after
    every trial's probe)."""
    assert problem(changed(path, value), catalog=CATALOG) == sentence


def test_a_trials_objective_a_top_k_job_does_not_rank_by_is_refused() -> None:
    options = changed("trials.objective", {"job": "best", "property": "loss"})

    assert problem(options) == (
        "the trials' objective 'loss' is not what top_k job 'best' ranks by ('tps'): its "
        "result has the best's value of 'tps' only"
    )
    best = {"job": "best", "property": "tps", "direction": "max"}
    assert problem(changed("trials.objective", best)) is None


def test_an_entity_fixing_what_the_trials_vary_on_its_trials_space_is_refused() -> None:
    entity = {"model_size": "tiny", "batch_size": 4, "lr": "${trial.lr}"}
    options = changed("stages.evaluate.1.entities", [entity])
    del options["stages"]["evaluate"][1]["space"]

    assert problem(options) == (
        "measure job 'longer': entity 1 sets 'batch_size', which the trials vary: write "
        "batch_size: '${trial.batch_size}'"
    )


def test_a_malformed_nested_pipeline_is_refused_at_the_door() -> None:
    nested = {"stages": {"refine": [{"name": "k", "kind": "hook", "hook": "ksigma"}]}}
    job = {"name": "inner", "kind": "operation", "operator": "pipeline"}
    options = changed("stages.execute", [{**job, "parameters": {"options": nested}}])
    options["stages"]["evaluate"] = []
    options["trials"]["objective"]["job"] = "inner"

    assert problem(options) == (
        "pipeline job 'inner': hook job 'k' uses hook 'ksigma', which is not known: "
        "use k_sigma, prune_invalid, top_k"
    )


def test_a_hook_reading_a_pipeline_job_is_refused_at_the_door() -> None:
    """It failed when the hook ran ('its measurements are its jobs''), after the probe and
    the nested pipeline had spent their measurements."""
    walk = {"name": "p", "kind": "operation", "operator": "random_walk"}
    inner = {"name": "inner", "kind": "operation", "operator": "pipeline"}
    nested = {**inner, "parameters": {"options": {"stages": {"probe": [walk]}}}}
    options = changed("stages.probe", [GOOD["stages"]["probe"][0], nested])
    assert problem(options) is None  # its hooks read 'probe'
    options["stages"]["refine"][0]["args"]["job"] = "inner"

    assert problem(options) == (
        "hook job 'pruned' reads the measurements of job 'inner', a pipeline job, whose "
        "measurements are its own jobs': name an operation or measure job"
    )


def test_a_nested_pipeline_reading_its_own_jobs_passes_the_door() -> None:
    """Its references were checked as the outer pipeline's: 'job 'inner' reads job
    'narrowed', which does not exist'."""
    walk = {"kind": "operation", "operator": "random_walk"}
    nested = {
        "stages": {
            "probe": [{"name": "p", **walk}],
            "refine": [
                {"name": "narrowed", "kind": "hook", "hook": "k_sigma", "args": {"job": "p"}}
            ],
            "execute": [{"name": "search", **walk, "space": "${narrowed.space_id}"}],
        }
    }
    options = {
        "stages": {
            "execute": [
                {"name": "inner", "kind": "operation", "operator": "pipeline",
                 "parameters": {"options": nested}},
            ]
        }
    }  # fmt: skip

    assert problem(options) is None
    wrong = {**nested, "stages": {**nested["stages"], "execute": [{"name": "s", **walk,
             "space": "${narowed.space_id}"}]}}  # fmt: skip
    options["stages"]["execute"][0]["parameters"]["options"] = wrong
    assert problem(options) == (
        "pipeline job 'inner': job 's' reads job 'narowed', which does not exist"
    )


def test_a_hook_on_another_spaces_job_is_not_checked_against_the_pipelines_space() -> None:
    """Its space is known when it runs: a property of that space, which the pipeline's lacks,
    was refused at the door."""
    other = {"name": "elsewhere", "kind": "operation", "operator": "random_walk",
             "space": "space-0123456789ab"}  # fmt: skip
    narrow = {"name": "narrowed", "kind": "hook", "hook": "k_sigma",
              "args": {"job": "elsewhere", "space": "${elsewhere.space_id}",
                       "properties": ["gpu_clock"]}}  # fmt: skip
    options = {"stages": {"probe": [other], "refine": [narrow]}}

    assert problem(options, catalog=CATALOG) is None
    on_ours = {**narrow, "args": {**narrow["args"], "job": "probe", "space": "${probe.space_id}"}}
    ours = {"stages": {"probe": [GOOD["stages"]["probe"][0]], "refine": [on_ours]}}
    assert problem(ours, catalog=CATALOG) == (
        "hook job 'narrowed': k_sigma cannot narrow 'gpu_clock': the space has no such property"
    )


def _with_trials_of_its_own(*more: dict[str, Any]) -> dict[str, Any]:
    """A pipeline with trials over batch_size, measuring one entity with the trial's value."""
    entity = {"model_size": "tiny", "batch_size": "${trial.batch_size}", "lr": 0.001}
    experiment = {"actuator": "cpu_train", "experiment": "train"}
    measure = {"name": "m", "kind": "measure", "entities": [entity], "experiment": experiment}
    objective = {"job": "m", "property": "tps", "direction": "max"}
    return {
        "stages": {"probe": [measure, *more]},
        "trials": {"count": 2, "over": {"batch_size": {"values": [4, 16]}}, "objective": objective},
    }


def _runs(options: dict[str, Any], name: str = "tune") -> dict[str, Any]:
    parameters = {"options": options}
    return {"name": name, "kind": "operation", "operator": "pipeline", "parameters": parameters}


def test_a_pipeline_with_trials_of_its_own_at_any_depth_reads_its_own_trials() -> None:
    """Its ${trial...} were read as the running pipeline's: 'job 'wrap' reads
    ${trial.batch_size}, but the pipeline has no trials'."""
    inner = _with_trials_of_its_own()
    assert problem({"stages": {"execute": [_runs(inner)]}}) is None
    wrap = {"stages": {"execute": [_runs(inner)]}}
    assert problem({"stages": {"execute": [_runs(wrap, "wrap")]}}) is None


def test_a_malformed_pipeline_with_trials_of_its_own_is_refused_at_the_door() -> None:
    """Its shape was checked only when its job's turn came, after earlier jobs measured."""
    unknown = {"name": "k", "kind": "hook", "hook": "ksigma", "args": {"job": "m"}}
    options = {"stages": {"execute": [_runs(_with_trials_of_its_own(unknown))]}}
    assert problem(options) == (
        "pipeline job 'tune': hook job 'k' uses hook 'ksigma', which is not known: "
        "use k_sigma, prune_invalid, top_k"
    )


def test_a_job_ranking_the_other_way_from_what_reads_its_best_is_refused() -> None:
    """Its best is the worst for what reads it: a pipeline minimising loss reported the highest
    loss measured as its best, a trial the highest as its value."""
    minimising = Objective(property="tps", direction="min")
    trials_min = changed("trials.objective.direction", "minimize")
    top_k_min = changed("trials.objective", {"job": "best", "property": "tps", "direction": "min"})
    top_k_min["stages"]["evaluate"][0]["args"]["objective"] = {
        "property": "tps",
        "direction": "max",
    }
    untried = copy.deepcopy(GOOD)
    del untried["trials"]

    assert problem(untried, objective=minimising) == (
        "operation job 'search' ranks 'tps' highest first, the pipeline's objective lowest "
        "first: its best would be read as the pipeline's best, the worst value for it; give "
        "both one direction"
    )
    assert problem(trials_min) == (
        "operation job 'search' ranks 'tps' highest first, the trials' objective lowest first: "
        "its best would be read as the trials' best, the worst value for it; give both one "
        "direction"
    )
    assert problem(top_k_min, objective=minimising) == (
        "operation job 'search' ranks 'tps' highest first, the trials' objective lowest first: "
        "its best would be read as the trials' best, the worst value for it; give both one "
        "direction"
    )
    top_k_min["stages"]["execute"][0]["parameters"]["objective"]["direction"] = "min"
    assert problem(top_k_min).startswith("hook job 'best' ranks 'tps' highest first")
    assert problem(untried, objective=Objective(property="loss", direction="min")) is None
    assert problem(GOOD, objective=minimising) is None  # trials rank the pipeline's trials


def test_a_nested_pipeline_inheriting_an_objective_it_ranks_the_other_way_is_refused() -> None:
    """The nested pipeline takes the outer objective when its job gives none, and its own
    check refused it when the job's turn came, after the probe had measured."""
    inner = {"stages": {"execute": [copy.deepcopy(GOOD["stages"]["execute"][0])]}}
    inner["stages"]["execute"][0]["space"] = None
    del inner["stages"]["execute"][0]["space"]
    options = copy.deepcopy(GOOD)
    del options["trials"]
    options["stages"]["execute"][0]["parameters"]["objective"]["direction"] = "min"
    options["stages"]["evaluate"] = [
        {
            "name": "inner",
            "kind": "operation",
            "operator": "pipeline",
            "parameters": {"options": inner},
        }
    ]
    minimising = Objective(property="tps", direction="min")

    assert problem(options, objective=minimising) == (
        "pipeline job 'inner': operation job 'search' ranks 'tps' highest first, the pipeline's "
        "objective lowest first: its best would be read as the pipeline's best, the worst "
        "value for it; give both one direction"
    )
    inner["stages"]["execute"][0]["parameters"]["objective"]["direction"] = "min"
    assert problem(options, objective=minimising) is None


def test_a_pipeline_job_without_options_is_refused_at_the_door() -> None:
    """It failed when its turn came ('pipeline: stages: is required'), after the probe."""
    options = copy.deepcopy(GOOD)
    options["stages"]["execute"].append(
        {"name": "inner", "kind": "operation", "operator": "pipeline"}
    )

    assert problem(options) == "pipeline job 'inner': pipeline: stages: is required"


def test_a_count_its_jobs_counts_do_not_hold_is_refused() -> None:
    """Only the first key was checked: `${probe.counts.nope}` failed after the probe ran."""
    options = changed("stages.execute.0.parameters.number_entities", "${probe.counts.nope}")

    assert problem(options) == (
        "job 'search' reads ${probe.counts.nope}, but the counts of job 'probe' are numbers "
        "named requested, measured, reused, failed, invalid"
    )
    assert (
        problem(changed("stages.execute.0.parameters.number_entities", "${probe.counts.measured}"))
        is None
    )


def test_the_count_keys_are_the_counts_an_operation_reports() -> None:
    from discospace.events import OperationCounts

    assert set(COUNT_KEYS) == set(OperationCounts.model_fields)
