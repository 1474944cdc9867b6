"""A pipeline across restarts and replicas: folding the same log decides the same events with
the same ids, never reruns a job that ended, and the replica that owns a pipeline follows its
children wherever they are decided."""

from __future__ import annotations

from discospace.events import (
    Event,
    OperationCompleted,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobStarted,
    SamplesRequested,
    SpaceSubmitted,
)
from discospace.events.common import OperationEvent


def _ids(events: list[Event]) -> list[tuple[str, str]]:
    return [(type(e).__name__, e.event_id) for e in events]


def _between_probe_and_search(world, sandbox_options):
    """A pipeline stopped with `probe` and `narrowed` done and `search` measuring."""
    w = world()
    w.hold = True
    w.request("op-1", w.register(), sandbox_options(), seed=7)
    while "search" not in [e.job for e in w.of(PipelineJobStarted, "op-1")]:
        w.release(keep_holding=True)
    assert [e.job for e in w.of(PipelineJobCompleted, "op-1")] == ["probe", "narrowed"]
    assert [e.job for e in w.of(PipelineJobStarted, "op-1")][-1] == "search"
    return w


def test_a_restart_between_two_jobs_reruns_nothing_and_goes_on(world, sandbox_options):
    w = _between_probe_and_search(world, sandbox_options)
    calls = w.actuator_calls
    assert w.restart() == []
    w.release()
    for job in ("probe", "narrowed", "search", "top", "remeasure"):
        assert len([e for e in w.of(PipelineJobStarted, "op-1") if e.job == job]) == 1
    children = [e.operation_id for e in w.of(OperationRequested) if e.operation_id != "op-1"]
    assert children == ["op-1-probe", "op-1-search", "op-1-remeasure"]
    assert len(w.of(SpaceSubmitted)) == 2
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_detail == "5 jobs completed"
    untouched = world()
    untouched.request("op-1", untouched.register(), sandbox_options(), seed=7)
    assert w.actuator_calls == untouched.actuator_calls > calls
    assert {e.event_id for e in w.log} == {e.event_id for e in untouched.log}


def test_decisions_lost_in_a_crash_are_decided_again_with_the_same_ids(world, sandbox_options):
    w = _between_probe_and_search(world, sandbox_options)
    # the crash lost the search child's request and everything after it
    [request] = [e for e in w.log if getattr(e, "operation_id", "") == "op-1-search"][:1]
    lost = w.log[w.log.index(request) :]
    del w.log[w.log.index(request) :]
    w.held.clear()
    again = w.restart()
    assert _ids(again)[:2] == _ids(lost)[:2]
    assert isinstance(again[0], OperationRequested)
    assert again[0].operation_id == "op-1-search"
    assert isinstance(again[1], OperationEvent)
    assert not [e for e in again if isinstance(e, PipelineJobStarted)]
    w.release()
    assert w.of(OperationCompleted, "op-1")


def test_children_folded_before_their_pipeline_keep_the_results_it_reads(world, sandbox_options):
    """A start-up fold may read a child's partition before its pipeline's: the child's
    results are kept all the same, and the pipeline's hook reads them after the restart."""
    w = world()
    w.hold = True
    w.request("op-1", w.register(), sandbox_options(), seed=7)
    while "search" not in [e.job for e in w.of(PipelineJobStarted, "op-1")]:
        w.release(keep_holding=True)
    narrowed = [e for e in w.log if isinstance(e, PipelineJobStarted) and e.job == "narrowed"]
    cut = w.log.index(narrowed[0])
    w.log = w.log[:cut]
    w.held.clear()
    w.queue.clear()

    def child(event: Event) -> bool:
        return getattr(event, "operation_id", "op-1") != "op-1"

    again = w.restart(first=child)
    assert [e.job for e in again if isinstance(e, PipelineJobStarted)] == ["narrowed"]
    assert [e for e in again if isinstance(e, SpaceSubmitted)]
    w.run()
    w.release()
    assert w.of(OperationCompleted, "op-1")[0].stop_detail == "5 jobs completed"


def test_a_replica_owning_the_pipeline_follows_children_another_replica_decides(
    world, sandbox_options
):
    def parents(operation: str) -> bool:
        return operation == "op-1"

    def children(operation: str) -> bool:
        return operation != "op-1"

    split = world(owners=(parents, children))
    split.request("op-1", split.register(), sandbox_options(), seed=7)
    alone = world()
    alone.request("op-1", alone.register(), sandbox_options(), seed=7)
    assert [e.event_id for e in split.log if isinstance(e, OperationEvent)] == [
        e.event_id for e in alone.log if isinstance(e, OperationEvent)
    ]
    parent_replica, child_replica = split.replicas
    assert parent_replica.state.operations["op-1"].finished is not None
    assert child_replica.state.operations["op-1"].finished is not None
    assert split.of(SamplesRequested, "op-1-probe")
