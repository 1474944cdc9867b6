"""Trials: child pipelines one after another (or a few at once), each on a space with the
trials' properties fixed to values the optimizer chose from the pipeline's seed; the pipeline
ends with the best trial, and repeated values reuse the store."""

from __future__ import annotations

from typing import Any

from discospace.core import Objective, PropertySpec, SpaceSpec
from discospace.events import (
    MeasurementCompleted,
    MeasurementReused,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
)

LONGER = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}
CONTINUOUS = PropertySpec(name="lr", type="continuous", range=(0.0, 1.0))


def recipe(count: int = 4, over: dict[str, Any] | None = None, **trials: Any) -> dict[str, Any]:
    """probe the batch sizes with the trial's lr fixed, keep the best, score it longer."""
    walk = {"number_entities": 3, "batch_size": 3}
    return {
        "stages": {
            "probe": [
                {
                    "name": "probe",
                    "kind": "operation",
                    "operator": "random_walk",
                    "parameters": walk,
                }
            ],
            "refine": [
                {
                    "name": "top",
                    "kind": "hook",
                    "hook": "best",
                    "args": {"job": "probe", "k": 1, "lr": "${trial.lr}", "note": "lr ${trial.lr}"},
                }
            ],
            "evaluate": [
                {
                    "name": "score",
                    "kind": "measure",
                    "entities": "${top.entities}",
                    "experiment": LONGER,
                }
            ],
        },
        "trials": {
            "count": count,
            "over": over or {"lr": {"values": [0.1, 0.2, 0.3]}},
            "objective": {"job": "score", "property": "loss", "direction": "minimize"},
            **trials,
        },
    }


def _space(w: Any, base: SpaceSpec, lr: PropertySpec | None = None) -> tuple[Any, str]:
    """The world, and its space registered (with `lr` instead of the space's, if given)."""
    if lr is not None:
        properties = tuple(lr if p.name == "lr" else p for p in base.entity_space)
        base = base.model_copy(update={"entity_space": properties})
    return w, w.register(base)


def _trials(w) -> list[PipelineJobCompleted]:
    return [e for e in w.of(PipelineJobCompleted, "op-1") if e.stage == "trials"]


def test_trials_run_one_child_pipeline_after_another_each_on_its_fixed_space(world, base_space):
    w, space = _space(world(), base_space)
    w.request("op-1", space, recipe(count=4), seed=3)
    started = w.of(PipelineJobStarted, "op-1")
    assert [(e.job, e.stage, e.trial) for e in started] == [
        (f"trial-{i}", "trials", i) for i in range(4)
    ]
    position = {id(e): n for n, e in enumerate(w.log)}
    ends = {e.trial: position[id(e)] for e in w.of(PipelineJobCompleted, "op-1")}
    children = {
        e.operation_id: e for e in w.of(OperationRequested) if e.parent_operation_id == "op-1"
    }
    assert sorted(children) == [f"op-1-trial-{i}" for i in range(4)]
    for i in range(1, 4):
        assert ends[i - 1] < position[id(children[f"op-1-trial-{i}"])]
    for result in (e.result for e in _trials(w)):
        child = children[result["operation_id"]]
        lr = result["values"]["lr"]
        [registered] = [s for s in w.state.spaces.values() if s.space_id == child.space_id]
        assert registered.entity_space.get_property("lr").domain.values == (lr,)
        assert "trials" not in child.parameters.options
        [hook] = child.parameters.options["stages"]["refine"]
        assert hook["args"]["lr"] == lr
        assert hook["args"]["note"] == f"lr {lr}"
        assert child.operator == "pipeline"
        assert child.parameters.objective is not None


def test_the_pipeline_ends_with_the_best_trial(world, base_space):
    w, space = _space(world(), base_space)
    w.request("op-1", space, recipe(count=4), seed=3)
    results = [e.result for e in _trials(w)]
    best = min(results, key=lambda r: (r["objective"], r["trial"]))
    [done] = w.of(OperationCompleted, "op-1")
    assert done.best_values == {"lr": best["values"]["lr"], "loss": best["objective"]}
    assert done.best_entity_id == best["best_entity_id"]
    assert done.stop_detail.startswith(f"best of 4 trials: trial {best['trial']} (lr=")
    [score] = [
        e.result for e in w.of(PipelineJobCompleted, best["operation_id"]) if e.job == "score"
    ]
    assert best["objective"] == min(row["results"]["loss"] for row in score["rows"])


def test_each_trial_pipeline_searches_for_the_trials_objective_not_the_pipelines(world, base_space):
    """With tokens per second as the pipeline's objective, each trial's jobs would pick their
    best by speed, and the trial's loss would be the fastest entity's, not its lowest."""
    w, space = _space(world(), base_space)
    options = recipe(count=2)
    options["trials"]["objective"]["job"] = "probe"  # an operation: its best_values count
    w.request("op-1", space, options, seed=3, objective={"property": "tps", "direction": "max"})

    children = [e for e in w.of(OperationRequested) if e.parent_operation_id == "op-1"]
    assert [c.parameters.objective for c in children] == [
        Objective(property="loss", direction="min")
    ] * 2
    for trial in _trials(w):
        probe = f"{trial.result['operation_id']}-probe"
        losses = [e.values["loss"] for e in w.of(MeasurementCompleted, probe) if e.is_valid]
        assert len(losses) > 1
        assert trial.result["objective"] == min(losses)


def test_a_trials_objective_may_name_a_top_k_job(world, base_space, hooks):
    from discospace.core.hooks import top_k

    w, space = _space(world(hooks={**hooks, "top_k": top_k}), base_space)
    options = recipe(count=2)
    options["stages"]["refine"] = [
        {
            "name": "top",
            "kind": "hook",
            "hook": "top_k",
            "args": {"job": "probe", "k": 1, "objective": {"property": "loss", "direction": "min"}},
        }
    ]
    options["stages"]["evaluate"][0]["entities"] = "${top.entities}"
    options["trials"]["objective"]["job"] = "top"
    w.request("op-1", space, options, seed=3)

    tops = {
        e.operation_id: e.result["values"][0] for e in w.of(PipelineJobCompleted) if e.job == "top"
    }
    trials = [e.result for e in _trials(w)]
    assert len(trials) == 2
    assert [t["objective"] for t in trials] == [tops[t["operation_id"]] for t in trials]
    assert w.of(OperationCompleted, "op-1")


def test_the_same_seed_chooses_the_same_trials(world, base_space):
    chosen = []
    for seed in (3, 3, 4):
        w, space = _space(world(), base_space, CONTINUOUS)
        w.request("op-1", space, recipe(count=5, over={"lr": {"range": [0.0, 1.0]}}), seed=seed)
        chosen.append([e.result["values"]["lr"] for e in _trials(w)])
    assert chosen[0] == chosen[1]
    assert chosen[0] != chosen[2]
    assert len(set(chosen[0])) == 5


def test_a_window_runs_several_trials_at_once(world, base_space):
    w, space = _space(world(), base_space)
    w.hold = True
    w.request("op-1", space, recipe(count=3), seed=3, batch_size=2)
    started = [e.job for e in w.of(PipelineJobStarted, "op-1")]
    assert started == ["trial-0", "trial-1"]
    while not w.of(OperationCompleted, "op-1"):
        w.release(keep_holding=True)
    assert len(_trials(w)) == 3


def test_repeated_trial_values_reuse_the_store(world, base_space):
    w, space = _space(world(), base_space)
    w.request("op-1", space, recipe(count=4, over={"lr": {"values": [0.1, 0.2]}}), seed=3)
    values = [e.result["values"]["lr"] for e in _trials(w)]
    assert len(set(values)) < len(values)
    reused = w.of(MeasurementReused)
    assert reused
    assert {e.operation_id.split("-probe")[0].split("-score")[0] for e in reused} <= {
        f"op-1-trial-{i}" for i in range(1, 4)
    }
    results = len(reused) + w.actuator_calls
    assert w.actuator_calls < results


def test_a_failed_trial_is_recorded_and_the_others_go_on(world, base_space):
    def no_small_lr(values: dict[str, Any], experiment: str) -> tuple[bool, dict[str, Any]]:
        if values["lr"] == 0.1:
            return False, {}
        return True, {"tps": 1.0, "loss": 1.0 - values["lr"]}

    w, space = _space(world(behaviour=no_small_lr), base_space)
    w.request(
        "op-1",
        space,
        recipe(count=6, over={"lr": {"values": [0.1, 0.3]}}, optimizer="random"),
        seed=3,
    )
    failed = w.of(PipelineJobFailed, "op-1")
    assert failed
    assert all(f.optional and f.stage == "trials" for f in failed)
    assert len(_trials(w)) + len(failed) == 6
    [done] = w.of(OperationCompleted, "op-1")
    assert done.best_values == {"lr": 0.3, "loss": 0.7}


def test_no_trial_with_a_value_fails_the_pipeline(world, base_space):
    w, space = _space(world(), base_space)
    options = recipe(count=2)
    options["trials"]["objective"] = {"job": "top", "property": "energy"}  # a hook's result
    w.request("op-1", space, options, seed=3)
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason == (
        "none of the 2 trials gave a value of 'energy': the last failed: "
        "trial 1: job 'top' gave no value of 'energy'"
    )


def test_a_trials_objective_its_job_does_not_measure_fails_before_any_trial(world, base_space):
    w, space = _space(world(), base_space)
    options = recipe(count=2)
    options["trials"]["objective"]["property"] = "energy"
    w.request("op-1", space, options, seed=3)
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason.endswith(
        "the trials' objective 'energy' is no target job 'score' measures: its targets are "
        "loss, tps"
    )
    assert not w.of(PipelineJobStarted, "op-1")


def test_a_restarted_explorer_reads_ended_trials_values_from_their_results(
    world, base_space, monkeypatch
):
    """Choosing them again would cost an optimizer's round per ended trial, each told of the
    trials before it: quadratic in the trials, under the explorer's lock."""
    import discospace.explorer.operators.pipeline.conductor as conductor

    w, space = _space(world(), base_space)
    w.request("op-1", space, recipe(count=6), seed=3)
    [fourth] = [e for e in _trials(w) if e.trial == 3]
    w.log = w.log[: w.log.index(fourth) + 1]  # the explorer stopped once trial 3 ended
    chosen: list[int] = []
    real = conductor.trial_values

    def counted(trials, seed, number, told):
        chosen.append(number)
        return real(trials, seed, number, told)

    monkeypatch.setattr(conductor, "trial_values", counted)

    decided = w.restart()

    started = [e.job for e in decided if isinstance(e, PipelineJobStarted)]
    assert started[0] == "trial-4"
    assert chosen == [4]  # trials 0 to 3 ended: their values are in their results


def _nested_trials(over: str, values: list[Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """A pipeline with trials of its own over `over`, measuring one entity with its value."""
    entity = {over: "${trial." + over + "}", **fixed}
    measure = {"name": "m", "kind": "measure", "entities": [entity], "experiment": LONGER}
    return {
        "stages": {"probe": [measure]},
        "trials": {
            "count": len(values),
            "over": {over: {"values": values}},
            "objective": {"job": "m", "property": "loss", "direction": "minimize"},
        },
    }


def _tune(options: dict[str, Any]) -> dict[str, Any]:
    parameters = {"options": options}
    return {"name": "tune", "kind": "operation", "operator": "pipeline", "parameters": parameters}


def test_a_nested_pipeline_with_trials_of_its_own_keeps_its_trial_references(world, base_space):
    """Its ${trial...} were read as the running pipeline's: refused at the door without outer
    trials ('the pipeline has no trials'), or when the outer trials are over other properties
    ('the trials are over lr only'), and replaced by the outer trial's value otherwise."""
    w, space = _space(world(), base_space)
    nested = _nested_trials("lr", [0.1, 0.2], {"batch_size": 2})
    w.request("op-1", space, {"stages": {"execute": [_tune(nested)]}}, seed=3)
    assert not w.of(OperationFailed)
    assert {e.entity_values["lr"] for e in w.of(MeasurementCompleted)} == {0.1, 0.2}

    w, space = _space(world(), base_space)
    outer = recipe(count=1, over={"lr": {"values": [0.3]}})
    outer["stages"]["execute"] = [_tune(_nested_trials("batch_size", [1, 4], {"lr": 0.3}))]
    w.request("op-1", space, outer, seed=3)
    assert not w.of(OperationFailed)
    inner = [e for e in w.of(MeasurementCompleted) if "-tune-" in e.operation_id]
    assert {e.entity_values["batch_size"] for e in inner} == {1, 4}
