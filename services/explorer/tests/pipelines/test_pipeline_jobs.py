"""A pipeline's jobs against hand-worked histories: order, references, spaces it registers,
measure jobs, results read once they all arrived."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from discospace.core import DiscoverySpace
from discospace.core.spec import SpaceSpec
from discospace.events import (
    MeasurementCompleted,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobStarted,
    SpaceSubmitted,
)
from discospace.explorer.domain.state import ExplorerState, explore, go_live

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)


def test_the_jobs_run_stage_after_stage_each_once_the_one_before_ended(world, sandbox_options):
    w = world()
    space = w.register()
    w.request("op-1", space, sandbox_options(), seed=7)

    starts = [e.job for e in w.of(PipelineJobStarted, "op-1")]
    ends = [e.job for e in w.of(PipelineJobCompleted, "op-1")]
    assert starts == ends == ["probe", "narrowed", "search", "top", "remeasure"]
    order = [
        (type(e).__name__, getattr(e, "job", None))
        for e in w.log
        if isinstance(e, PipelineJobStarted | PipelineJobCompleted)
    ]
    assert order == [
        (kind, job) for job in ends for kind in ("PipelineJobStarted", "PipelineJobCompleted")
    ]
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_reason == "operator_finished"
    assert done.stop_detail == "5 jobs completed"


def test_a_child_is_requested_only_after_the_job_before_it_completed(world, sandbox_options):
    w = world()
    w.request("op-1", w.register(), sandbox_options(), seed=7)
    position = {id(e): n for n, e in enumerate(w.log)}
    completed = {e.job: position[id(e)] for e in w.of(PipelineJobCompleted, "op-1")}
    requests = {e.operation_id: position[id(e)] for e in w.of(OperationRequested)}
    assert completed["probe"] < requests["op-1-search"]
    assert completed["top"] < requests["op-1-remeasure"]
    for child in w.of(OperationRequested):
        if child.operation_id != "op-1":
            assert child.parent_operation_id == "op-1"
            assert child.requested_by == "pipeline op-1"


def test_later_jobs_read_earlier_results_by_name(world, sandbox_options):
    w = world()
    w.request("op-1", w.register(), sandbox_options(), seed=7)
    results = {e.job: e.result for e in w.of(PipelineJobCompleted, "op-1")}
    [search] = [e for e in w.of(OperationRequested) if e.operation_id == "op-1-search"]
    assert search.space_id == results["narrowed"]["space_id"]
    [remeasure] = [e for e in w.of(OperationRequested) if e.operation_id == "op-1-remeasure"]
    assert remeasure.operator == "points"
    assert remeasure.parameters.options == {"points": results["top"]["entities"]}
    assert results["remeasure"]["entities"] == results["top"]["entities"]


def test_a_refined_space_is_registered_through_the_registry_before_the_job_completes(
    world, sandbox_options
):
    w = world()
    original = w.register()
    w.request("op-1", original, sandbox_options(), seed=7)
    results = {e.job: e.result for e in w.of(PipelineJobCompleted, "op-1")}
    kept = results["narrowed"]["kept"]
    [submitted, measured] = w.submissions
    assert submitted.submitted_by == "pipeline op-1"
    assert [p.values for p in submitted.spec.entity_space if p.name == "batch_size"] == [
        tuple(kept)
    ]
    assert DiscoverySpace.from_spec(submitted.spec).id == results["narrowed"]["space_id"]
    assert (
        submitted.spec.sample_store
        == SpaceSpec.model_validate(results["narrowed"]["space"]).sample_store
    )
    assert measured.spec.measurement_space[0].parameterization == {"steps": 50}


def test_a_measure_job_measures_exactly_its_entities_with_the_longer_run_in_the_same_store(
    world, sandbox_options
):
    w = world()
    w.request("op-1", w.register(), sandbox_options(), seed=7)
    results = {e.job: e.result for e in w.of(PipelineJobCompleted, "op-1")}
    remeasure = results["remeasure"]
    measured = w.of(MeasurementCompleted, "op-1-remeasure")
    assert sorted(m.entity_id for m in measured) == sorted(results["top"]["entity_ids"])
    assert {m.experiment_id for m in measured} == {remeasure["experiment"]}
    assert remeasure["experiment"] != w.of(MeasurementCompleted, "op-1-search")[0].experiment_id
    assert [row["entity_id"] for row in remeasure["rows"]] == remeasure["entity_ids"]
    assert all(row["results"]["loss"] < 2 for row in remeasure["rows"])
    assert remeasure["counts"]["measured"] == 2
    assert {m.sample_store for m in measured} == {"store-p"}


def test_the_pipeline_ends_with_the_best_of_its_last_execute_or_evaluate_job(
    world, sandbox_options
):
    w = world()
    w.request(
        "op-1",
        w.register(),
        sandbox_options(),
        seed=7,
        objective={"property": "loss", "direction": "min"},
    )
    results = {e.job: e.result for e in w.of(PipelineJobCompleted, "op-1")}
    [done] = w.of(OperationCompleted, "op-1")
    assert done.best_entity_id == results["remeasure"]["best_entity_id"]
    assert done.best_values == results["remeasure"]["best_values"]
    losses = [row["results"]["loss"] for row in results["remeasure"]["rows"]]
    assert done.best_values is not None
    assert done.best_values["loss"] == min(losses)
    children = [
        w.of(OperationCompleted, f"op-1-{job}")[0] for job in ("probe", "search", "remeasure")
    ]
    assert done.counts.measured + done.counts.reused == sum(
        c.counts.measured + c.counts.reused for c in children
    )


def test_children_get_seeds_derived_from_the_pipeline_seed_and_the_job_name(world, sandbox_options):
    seeds = []
    for _ in range(2):
        w = world()
        w.request("op-1", w.register(), sandbox_options(), seed=7)
        seeds.append({e.operation_id: e.parameters.seed for e in w.of(OperationRequested)})
    assert seeds[0] == seeds[1]
    assert len({seed for op, seed in seeds[0].items() if op != "op-1"}) == 3
    other = world()
    other.request("op-1", other.register(), sandbox_options(), seed=8)
    assert {e.operation_id: e.parameters.seed for e in other.of(OperationRequested)} != seeds[0]


def test_the_same_seed_gives_the_same_pipeline(world, sandbox_options):
    logs = []
    for _ in range(2):
        w = world()
        w.request("op-1", w.register(), sandbox_options(), seed=7)
        logs.append([(e.event_id, type(e).__name__) for e in w.log])
    assert logs[0] == logs[1]


def test_a_hook_waits_until_every_result_its_job_counted_has_been_read(world, sandbox_options):
    """A replica owning the pipeline but not its child can read the child's end before the
    child's last result (two topics): the hook runs only once every result the end counted
    is in, so it reads the same rows as on any other replica."""
    w = world()
    w.request("op-1", w.register(), sandbox_options(probe=3), seed=7)
    log = list(w.log)
    [end] = w.of(OperationCompleted, "op-1-probe")
    last = [e for e in log[: log.index(end)] if isinstance(e, MeasurementCompleted)][-1]
    assert last.operation_id == "op-1-probe"
    log.remove(last)
    log.insert(log.index(end) + 1, last)

    replica = ExplorerState(owns=lambda operation: operation == "op-1")
    engine = w._engine()
    decided = go_live(replica, engine, T0).events
    narrowed: list[Any] = []
    for event in log:
        if isinstance(event, SpaceSubmitted):
            continue
        if event is last:
            assert narrowed == []
        made = explore(replica, event, engine, T0).events  # type: ignore[arg-type]
        narrowed += [e for e in made if isinstance(e, SpaceSubmitted)]
        decided += made
    assert narrowed, "the hook ran once the last result was read"
    assert narrowed[0].event_id == w.submissions[0].event_id
    assert narrowed[0].spec == w.submissions[0].spec


def test_a_hook_reading_a_job_that_ran_a_pipeline_is_refused_before_any_job_runs(world):
    """It failed when the hook ran, after the nested pipeline had measured."""
    inner = {
        "stages": {
            "probe": [
                {
                    "name": "walk",
                    "kind": "operation",
                    "operator": "random_walk",
                    "parameters": {"number_entities": 2},
                }
            ]
        }
    }
    outer = {
        "stages": {
            "probe": [
                {
                    "name": "nested",
                    "kind": "operation",
                    "operator": "pipeline",
                    "parameters": {"options": inner},
                }
            ],
            "refine": [
                {"name": "top", "kind": "hook", "hook": "best", "args": {"job": "nested", "k": 1}}
            ],
        }
    }
    w = world()
    w.request("op-1", w.register(), outer, seed=2)
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason.endswith(
        "hook job 'top' reads the measurements of job 'nested', a pipeline job, whose "
        "measurements are its own jobs': name an operation or measure job"
    )
    assert not w.of(OperationRequested, "op-1-nested")


def test_each_jobs_result_has_the_keys_the_door_checks_references_against(world, hooks):
    """`result_keys` is what the door refuses `${job.key}` by: it must be what jobs give."""
    from discospace.core.hooks import k_sigma, prune_invalid, top_k
    from discospace.core.pipelines import MEASURE_RESULT, OPERATION_RESULT, SHIPPED_HOOK_RESULTS

    shipped = {"k_sigma": k_sigma, "prune_invalid": prune_invalid, "top_k": top_k}
    w = world(hooks={**hooks, **shipped})
    loss = {"property": "loss", "direction": "min"}
    walk = {"number_entities": 6, "batch_size": 2}
    longer = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}

    def hook(name: str, used: str, **args: Any) -> dict[str, Any]:
        return {"name": name, "kind": "hook", "hook": used, "args": {"job": "probe", **args}}

    probe = {"name": "probe", "kind": "operation", "operator": "random_walk", "parameters": walk}
    again = {"name": "again", "kind": "measure", "entities": "${top.entities}"}
    options = {
        "stages": {
            "probe": [probe],
            "refine": [
                hook("pruned", "prune_invalid"),
                hook("narrowed", "k_sigma", objective=loss),
            ],
            "execute": [hook("top", "top_k", k=2, objective=loss)],
            "evaluate": [{**again, "experiment": longer}],
        }
    }
    w.request("op-1", w.register(), options, seed=1)

    results = {e.job: set(e.result) for e in w.of(PipelineJobCompleted, "op-1")}
    assert results == {
        "probe": set(OPERATION_RESULT),
        "pruned": set(SHIPPED_HOOK_RESULTS["prune_invalid"]),
        "narrowed": set(SHIPPED_HOOK_RESULTS["k_sigma"]),
        "top": set(SHIPPED_HOOK_RESULTS["top_k"]),
        "again": set(MEASURE_RESULT),
    }


def test_a_nested_pipeline_resolves_its_references_to_its_own_jobs(world, hooks):
    """The outer pipeline resolved every `${job...}` inside the pipeline a job runs: the inner
    `${narrowed.space_id}` read the outer job of that name, and the inner search ran on the
    outer pipeline's narrowed space, both pipelines completing as if nothing were wrong."""
    walk = {"kind": "operation", "operator": "random_walk", "parameters": {"number_entities": 4}}
    narrow = {"name": "narrowed", "kind": "hook", "hook": "narrow"}
    inner = {
        "stages": {
            "probe": [{"name": "p", **walk}],
            "refine": [{**narrow, "args": {"job": "p"}}],
            "execute": [{"name": "search", **walk, "space": "${narrowed.space_id}"}],
        }
    }
    outer = {
        "stages": {
            "probe": [{"name": "probe", **walk}],
            "refine": [{**narrow, "args": {"job": "probe"}}],
            "execute": [
                {
                    "name": "inner",
                    "kind": "operation",
                    "operator": "pipeline",
                    "parameters": {"options": inner},
                }
            ],
        }
    }
    w = world(hooks=hooks)
    w.request("op-1", w.register(), outer, seed=2)

    inner_jobs = w.of(PipelineJobCompleted, "op-1-inner")
    [inner_narrowed] = [e.result["space_id"] for e in inner_jobs if e.job == "narrowed"]
    [search] = [e for e in w.of(OperationRequested) if e.operation_id == "op-1-inner-search"]
    assert search.space_id == inner_narrowed
    assert w.of(OperationCompleted, "op-1")
