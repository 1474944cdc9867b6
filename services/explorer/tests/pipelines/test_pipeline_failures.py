"""A pipeline's failures and cancellation: a failed job fails the pipeline with its reason (an
optional one is recorded and the pipeline goes on); cancelling it cancels its running child."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import JsonValue

from discospace.core import PropertySpec
from discospace.core.errors import PipelineError
from discospace.core.hooks import HookContext
from discospace.events import (
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobFailed,
    PipelineJobStarted,
    SamplesRequested,
    encode_within,
)
from discospace.events.envelope import MAX_MESSAGE_BYTES, MAX_OPERATION_REASON_CHARS


def _walk(name: str, **fields: Any) -> dict[str, Any]:
    job = {"name": name, "kind": "operation", "operator": "random_walk"}
    job["parameters"] = {"number_entities": 2, **fields.pop("parameters", {})}
    return {**job, **fields}


def _pipeline(*probe: dict[str, Any], execute: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"stages": {"probe": list(probe), "execute": list(execute)}}


BROKEN = {"sampler": "grouped", "group_by": ["no_such_property"]}
LOSS = {"property": "loss", "direction": "min"}
"""Parameters a walk cannot run with on the space (found at its start, not at the door)."""


def test_a_failed_job_fails_the_pipeline_with_its_reason(world):
    w = world()
    broken = _walk("probe", parameters=BROKEN)
    w.request("op-1", w.register(), _pipeline(broken, execute=(_walk("search"),)), seed=1)
    [child] = w.of(OperationFailed, "op-1-probe")
    [job] = w.of(PipelineJobFailed, "op-1")
    assert (job.job, job.stage, job.optional) == ("probe", "probe", False)
    assert job.reason == f"its child operation 'op-1-probe' failed: {child.reason}"
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason == f"job 'probe' (probe) failed: {job.reason}"
    assert not [e for e in w.of(PipelineJobStarted, "op-1") if e.job == "search"]


def test_a_job_whose_parameters_no_operation_takes_is_refused_before_any_job_runs(world):
    """They were refused when the job's turn came, after the jobs before it had run (and spent
    their measurements)."""
    w = world()
    bad = _walk("search", parameters={"batch_size": 0})
    w.request("op-1", w.register(), _pipeline(_walk("probe"), execute=(bad,)), seed=1)
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason.endswith(
        "operation job 'search': its parameters are not valid: batch_size: Input should be "
        "greater than 0"
    )
    assert not w.of(PipelineJobStarted, "op-1")
    assert not w.of(OperationRequested, "op-1-probe")


@pytest.mark.parametrize(
    ("parameters", "sentence"),
    [
        ({"stopping": {"max_duration": "3ep"}}, "max_duration must be a wall-clock time"),
        ({"options": {"depth": 3}}, "random_walk takes no options, but was given depth"),
        (
            {
                "operator": "optuna_cmaes",
                "objectives": [LOSS, {"property": "tps", "direction": "max"}],
            },
            "optuna_cmaes optimises one objective, but 2 were given",
        ),
    ],
)
def test_a_job_its_operator_cannot_run_whatever_the_space_is_refused_before_any_job_runs(
    world, parameters, sentence
):
    """Its rules were applied when the job's turn came: the probe had run and spent its
    measurements, then the pipeline failed."""
    w = world()
    parameters = dict(parameters)
    bad = _walk("search", operator=parameters.pop("operator", "random_walk"), parameters=parameters)
    w.request("op-1", w.register(), _pipeline(_walk("probe"), execute=(bad,)), seed=1)
    [failed] = w.of(OperationFailed, "op-1")
    assert f"operation job 'search': its parameters are not valid: {sentence}" in failed.reason
    assert not w.of(OperationRequested, "op-1-probe")


def test_an_optimizer_job_without_an_objective_takes_the_pipelines_and_passes_the_door(world):
    """The door's rules for a job counted only the job's own objectives: an optimizer job
    that takes the pipeline's (as the shipped hardware example's does) was refused."""
    w = world()
    search = _walk("search", operator="optuna_tpe", parameters={"number_entities": 2})
    w.request("op-1", w.register(), _pipeline(_walk("probe"), execute=(search,)), seed=1,
              objective=LOSS)  # fmt: skip
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_reason == "operator_finished"
    [child] = [e for e in w.of(OperationRequested) if e.operation_id == "op-1-search"]
    assert child.parameters.objective is not None
    assert child.parameters.objective.property == "loss"


def test_a_failed_optional_job_is_recorded_and_the_pipeline_goes_on(world):
    w = world()
    broken = _walk("probe", optional=True, parameters=BROKEN)
    w.request("op-1", w.register(), _pipeline(broken, execute=(_walk("search"),)), seed=1)
    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.optional
    assert [e.job for e in w.of(PipelineJobCompleted, "op-1")] == ["search"]
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_detail == "1 jobs completed, 1 failed (probe)"


def test_a_job_reading_the_result_of_a_failed_optional_job_fails_saying_so(world):
    w = world()
    broken = _walk("probe", optional=True, parameters=BROKEN)
    reader = _walk("search", space="${probe.space_id}")
    w.request("op-1", w.register(), _pipeline(broken, execute=(reader,)), seed=1)
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason == (
        "job 'search' (execute) failed: reference ${probe.space_id} names job 'probe', "
        "which has no result yet"
    )
    assert not [e for e in w.of(OperationRequested) if e.operation_id == "op-1-search"]


def test_a_hook_that_cannot_work_fails_its_job_with_its_sentence(world, hooks):
    def refuse(context: HookContext) -> dict[str, JsonValue]:
        raise PipelineError("hook 'refuse' found no valid row of job 'probe'")

    def crash(context: HookContext) -> dict[str, JsonValue]:
        return {"half": 1 / 0}

    w = world(hooks={**hooks, "refuse": refuse, "crash": crash})
    jobs = {
        "probe": [_walk("probe")],
        "refine": [
            {"name": "broken", "kind": "hook", "hook": "crash", "optional": True},
            {"name": "refused", "kind": "hook", "hook": "refuse", "args": {"job": "probe"}},
        ],
    }
    w.request("op-1", w.register(), {"stages": jobs}, seed=1)
    reasons = {e.job: e.reason for e in w.of(PipelineJobFailed, "op-1")}
    assert reasons == {
        "broken": "hook 'crash' failed: ZeroDivisionError: division by zero",
        "refused": "hook 'refuse' found no valid row of job 'probe'",
    }
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason.endswith("hook 'refuse' found no valid row of job 'probe'")


def test_a_hook_that_calls_exit_fails_its_job_not_the_explorer(world, hooks):
    """SystemExit is no Exception: it stopped the explorer, and every restart again at the
    same job (the message was never committed)."""

    def quits(context: HookContext) -> dict[str, JsonValue]:
        raise SystemExit(3)

    w = world(hooks={**hooks, "quits": quits})
    jobs = {"probe": [_walk("probe")], "refine": [{"name": "q", "kind": "hook", "hook": "quits"}]}
    w.request("op-1", w.register(), {"stages": jobs}, seed=1)

    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.reason == "hook 'quits' called exit (3): a hook returns or raises"
    assert w.of(OperationFailed, "op-1")


def test_a_result_too_large_for_a_message_fails_its_job_instead_of_blocking_the_explorer(
    world, hooks
):
    """Published, its PipelineJobCompleted would be refused by the size check again and again,
    and the explorer, retrying it under its lock, would decide nothing else."""

    def huge(context: HookContext) -> dict[str, JsonValue]:
        return {"rows": ["x" * 1000] * 1100}

    w = world(hooks={**hooks, "huge": huge})
    jobs = {"probe": [_walk("probe")], "refine": [{"name": "big", "kind": "hook", "hook": "huge"}]}
    w.request("op-1", w.register(), {"stages": jobs}, seed=1)

    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.job == "big"
    assert job.reason.startswith("its result is ")
    assert job.reason.endswith(
        " bytes as a message, over the 1048576-byte limit of a message: give the job fewer "
        "entities, or split it into several jobs"
    )
    assert [e.job for e in w.of(PipelineJobCompleted, "op-1")] == ["probe"]
    assert w.of(OperationFailed, "op-1")


def test_a_result_over_the_explorers_own_limit_fails_only_its_job(world, hooks, monkeypatch):
    """The job's check used the default 1 MiB, the engine's the explorer's setting: a result
    between the two failed the whole pipeline, optional job or not."""
    world_type = type(world())
    engine = world_type._engine
    monkeypatch.setattr(
        world_type,
        "_engine",
        lambda self: dataclasses.replace(engine(self), max_message_bytes=64 * 1024),
    )

    def medium(context: HookContext) -> dict[str, JsonValue]:
        return {"rows": ["x" * 1000] * 100}  # about 100 kB: over 64 KiB, under 1 MiB

    w = world(hooks={**hooks, "medium": medium})
    jobs = {
        "probe": [_walk("probe")],
        "refine": [{"name": "big", "kind": "hook", "hook": "medium", "optional": True}],
    }
    w.request("op-1", w.register(), {"stages": jobs}, seed=1)

    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.reason.endswith("over the 65536-byte limit of a message: give the job fewer "
                               "entities, or split it into several jobs")  # fmt: skip
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_detail == "1 jobs completed, 1 failed (big)"


def test_a_hook_error_larger_than_a_message_fails_its_job_with_the_reason_cut_short(world, hooks):
    """The job's failure, then the pipeline's, quote the hook's error: uncut, neither would fit
    a message, and the explorer would retry publishing the first under its lock forever."""

    def loud(context: HookContext) -> dict[str, JsonValue]:
        raise ValueError("x" * 2 * MAX_MESSAGE_BYTES)

    w = world(hooks={**hooks, "loud": loud})
    jobs = {"probe": [_walk("probe")], "refine": [{"name": "loud", "kind": "hook", "hook": "loud"}]}
    w.request("op-1", w.register(), {"stages": jobs}, seed=1)

    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.reason.startswith("hook 'loud' failed: ValueError: xxx")
    assert len(job.reason) == MAX_OPERATION_REASON_CHARS
    [failed] = w.of(OperationFailed, "op-1")
    assert failed.reason.startswith("job 'loud' (refine) failed: hook 'loud' failed: ValueError")
    assert len(failed.reason) == MAX_OPERATION_REASON_CHARS
    for event in w.log:
        encode_within(event)


def test_a_space_the_registry_refuses_fails_the_job_with_the_registry_reason(world):
    w = world()
    longer = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}
    measure = {"name": "again", "kind": "measure", "entities": [{"batch_size": 2, "lr": 0.1}]}
    space = w.register()
    w.catalog = ()  # the actuator left: the registry refuses what needs it
    w.request("op-1", space, _pipeline({**measure, "experiment": longer}), seed=1)
    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.reason.startswith("the registry refused space 'space-")
    assert job.reason.endswith(": experiment 'bench' is not in the catalog")
    assert not [e for e in w.of(OperationRequested) if e.operation_id == "op-1-again"]


def test_a_space_the_registry_does_not_answer_fails_the_job_after_the_wait(world):
    w = world()
    longer = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}
    measure = {"name": "again", "kind": "measure", "entities": [{"batch_size": 2, "lr": 0.1}]}
    space = w.register()
    w.registry_down = True
    w.request("op-1", space, _pipeline({**measure, "experiment": longer}), seed=1)
    w.tick(29)
    assert not w.of(PipelineJobFailed, "op-1")
    w.tick(1)
    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.reason.endswith(
        "was not registered within 30 s of its submission: is the registry running?"
    )


def test_cancelling_a_pipeline_mid_stage_cancels_its_running_child_and_ends_it(world):
    w = world()
    w.hold = True
    w.request("op-1", w.register(), _pipeline(_walk("probe"), _walk("second")), seed=1)
    assert w.of(SamplesRequested, "op-1-probe")
    w.cancel("op-1")
    [cancel] = w.of(OperationCancelRequested, "op-1-probe")
    assert cancel.requested_by == "pipeline op-1"
    assert cancel.reason == "its pipeline 'op-1' was cancelled by alice"
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_reason == "cancelled"
    assert done.stop_detail == "cancelled by alice: enough; 0 jobs completed"
    [child] = w.of(OperationCompleted, "op-1-probe")
    assert child.stop_reason == "cancelled"
    w.release()
    assert [e.job for e in w.of(PipelineJobStarted, "op-1")] == ["probe"]
    assert not [e for e in w.of(OperationRequested) if e.operation_id == "op-1-second"]


def test_a_pipeline_cancelled_while_a_child_runs_counts_what_that_child_measured(world):
    """The pipeline ended in the round of its cancel, before its child had: its counts left
    out the child's (0 measured for a probe that had spent a measurement)."""
    w = world()
    w.hold = True
    probe = _walk("probe", parameters={"number_entities": 4, "batch_size": 2})
    w.request("op-1", w.register(), _pipeline(probe), seed=1)
    w.send(w.held.pop(0))  # one measurement lands, one is in flight
    w.cancel("op-1")

    [child] = w.of(OperationCompleted, "op-1-probe")
    [done] = w.of(OperationCompleted, "op-1")
    assert (done.stop_reason, child.counts.measured) == ("cancelled", 1)
    assert done.counts == child.counts
    assert w.log.index(child) < w.log.index(done)


def test_a_child_cancelled_by_someone_else_fails_its_job(world):
    w = world()
    w.hold = True
    w.request("op-1", w.register(), _pipeline(_walk("probe")), seed=1)
    w.cancel("op-1-probe")
    [job] = w.of(PipelineJobFailed, "op-1")
    assert job.reason.startswith("its child operation 'op-1-probe' was cancelled: cancelled by")
    assert w.of(OperationFailed, "op-1")


def test_an_optional_job_whose_space_is_too_large_to_submit_fails_alone(world, hooks):
    """The size check came after the round was decided, for all its events: the pipeline
    failed ('a decision too large to publish'), its optional job with it, and the jobs after
    it never ran."""

    def huge(context: HookContext) -> dict[str, JsonValue]:
        rates = tuple(round(0.1 + i * 1e-7, 9) for i in range(200_000))
        properties = [
            PropertySpec(name=p.name, values=rates) if p.name == "lr" else p
            for p in context.space.entity_space
        ]
        space = context.space.model_copy(update={"entity_space": tuple(properties)})
        return {"space": space.model_dump(mode="json")}

    walk = {"kind": "operation", "operator": "random_walk", "parameters": {"number_entities": 2}}
    wide = {"name": "wide", "kind": "hook", "hook": "huge", "optional": True}
    jobs = {
        "probe": [{"name": "probe", **walk}],
        "refine": [{**wide, "args": {"job": "probe"}}],
        "execute": [{"name": "search", **walk}],
    }
    w = world(hooks={**hooks, "huge": huge})
    w.request("op-1", w.register(), {"stages": jobs}, seed=2)

    [failed] = w.of(PipelineJobFailed, "op-1")
    assert (failed.job, failed.optional) == ("wide", True)
    assert " bytes as a message, over the 1048576-byte limit of a message" in failed.reason
    [completed] = w.of(OperationCompleted, "op-1")
    assert completed.stop_detail == "2 jobs completed, 1 failed (wide)"


def test_a_hook_without_args_job_reads_the_earlier_jobs_that_measured_not_a_pipeline(world):
    """With no `args.job` a hook reads every earlier job with a child: a nested pipeline job
    among them failed the hook ('its measurements are its jobs'') after both had measured."""
    w = world()
    inner = {"name": "inner", "kind": "operation", "operator": "pipeline"}
    inner["parameters"] = {"options": _pipeline(_walk("walk"))}
    narrowed = {"name": "narrowed", "kind": "hook", "hook": "narrow", "args": {}}
    options = {"stages": {"probe": [_walk("probe"), inner], "refine": [narrowed]}}
    w.request("op-1", w.register(), options, seed=3)
    assert not w.of(PipelineJobFailed, "op-1")
    [done] = [e for e in w.of(PipelineJobCompleted, "op-1") if e.job == "narrowed"]
    assert w.of(OperationCompleted, "op-1-probe")
    assert w.of(OperationCompleted, "op-1")
    assert done.result["kept"]  # what the probe's walk measured valid
