"""A pipeline's views from a real store (chDB): its jobs, their children, the list by parent."""

from __future__ import annotations

from typing import Any

import pytest

from discospace.projector.reading import StoreViews
from discospace.projector.writing import Projection

pytestmark = pytest.mark.integration


def _views(store_client: Any, history: Any) -> StoreViews:
    Projection(store_client, "projector").write(history.read())
    return StoreViews(store_client)


def test_one_pipeline_shows_its_jobs_and_their_children_from_the_store(
    store_client, pipeline_story
) -> None:
    progress = _views(store_client, pipeline_story.history).operation("op-p")
    assert [(job.job, job.status) for job in progress.jobs] == [
        ("probe_walk", "completed"),
        ("narrow", "completed"),
        ("search", "running"),
        ("recheck", "pending"),
    ]
    search = progress.jobs[2]
    assert search.child is not None
    assert (search.child.operation_id, search.child.done, search.child.total) == (
        "op-p-search",
        1,
        2,
    )
    assert (progress.counts.requested, progress.done, progress.counts.in_flight) == (4, 3, 1)


def test_the_list_names_each_childs_pipeline_and_narrows_to_one_pipelines_children(
    store_client, pipeline_story
) -> None:
    views = _views(store_client, pipeline_story.history)
    listed = {p.operation_id: p for p in views.operations()}
    assert listed["op-p-search"].parent_operation_id == "op-p"
    assert listed["op-p"].parent_operation_id is None
    assert [job.job for job in listed["op-p"].jobs] == [
        "probe_walk",
        "narrow",
        "search",
        "recheck",
    ]
    assert listed["op-p"].done == 3
    children = [p.operation_id for p in views.operations(parent="op-p")]
    assert children == ["op-p-probe_walk", "op-p-search"]
    assert views.operations(parent="op-p-search") == []


def test_an_ended_pipeline_lists_the_jobs_and_counts_it_shows(store_client, pipeline_story) -> None:
    pipeline_story.finish()
    views = _views(store_client, pipeline_story.history)
    one = views.operation("op-p")
    listed = next(p for p in views.operations() if p.operation_id == "op-p")
    assert one.status == listed.status == "completed"
    assert one.counts == listed.counts
    assert [(j.job, j.status) for j in one.jobs] == [(j.job, j.status) for j in listed.jobs]
    assert one.jobs[-1].status == "optional-failed"
    assert one.best is not None
    assert one.best.value == 2500.0


def test_a_pipelines_own_results_are_none_its_children_measure(store_client, pipeline_story):
    views = _views(store_client, pipeline_story.history)
    assert views.operation_results("op-p") == []
    assert len(views.operation_results("op-p-probe_walk")) == 2
