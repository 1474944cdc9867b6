"""The shipped hooks (core's `prune_invalid`, `k_sigma`, `top_k`, found by their entry points)
in a pipeline shaped like the hardware example: probe, prune and narrow, search the refined
space with an optimizer, re-measure the best with a longer run."""

from __future__ import annotations

from typing import Any

from discospace.core import DiscoverySpace
from discospace.events import (
    MeasurementCompleted,
    OperationCompleted,
    OperationRequested,
    PipelineJobCompleted,
)

LOSS = {"property": "loss", "direction": "min"}
LONGER = {"actuator": "Bench", "experiment": "bench", "parameterization": {"steps": 50}}


def hardware() -> dict[str, Any]:
    return {
        "stages": {
            "probe": [
                {
                    "name": "probe",
                    "kind": "operation",
                    "operator": "random_walk",
                    "parameters": {"number_entities": 8, "batch_size": 4},
                }
            ],
            "refine": [
                {
                    "name": "pruned",
                    "kind": "hook",
                    "hook": "prune_invalid",
                    "args": {"job": "probe"},
                },
                {
                    "name": "narrowed",
                    "kind": "hook",
                    "hook": "k_sigma",
                    "args": {
                        "job": "probe",
                        "space": "${pruned.space_id}",
                        "k": 1,
                        "objective": LOSS,
                    },
                },
            ],
            "execute": [
                {
                    "name": "search",
                    "kind": "operation",
                    "space": "${narrowed.space_id}",
                    "operator": "optuna_tpe",
                    "parameters": {"number_entities": 3, "objective": LOSS},
                },
                {
                    "name": "top",
                    "kind": "hook",
                    "hook": "top_k",
                    "args": {"job": "search", "k": 2, "objective": LOSS},
                },
            ],
            "evaluate": [
                {
                    "name": "remeasure",
                    "kind": "measure",
                    "entities": "${top.entities}",
                    "experiment": LONGER,
                }
            ],
        }
    }


def test_the_shipped_hooks_refine_the_space_and_pick_what_is_measured_again(world):
    w = world(hooks=None)
    original = w.register()
    w.request("op-1", original, hardware(), seed=11)
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_reason == "operator_finished", done
    results = {e.job: e.result for e in w.of(PipelineJobCompleted, "op-1")}
    pruned = DiscoverySpace.from_spec(w.state.spaces[results["pruned"]["space_id"]].spec)
    assert 1 not in pruned.entity_space.get_property("batch_size").domain.values
    assert results["pruned"]["pruned"] == {"batch_size": [1]}
    narrowed = w.state.spaces[results["narrowed"]["space_id"]]
    assert narrowed.sample_store == "store-p"
    [search] = [e for e in w.of(OperationRequested) if e.operation_id == "op-1-search"]
    assert search.space_id == results["narrowed"]["space_id"]
    for measured in w.of(MeasurementCompleted, "op-1-search"):
        assert measured.entity_values in narrowed.entity_space
    again = w.of(MeasurementCompleted, "op-1-remeasure")
    assert sorted(m.entity_id for m in again) == sorted(results["top"]["entity_ids"])
    assert {m.experiment_id for m in again} == {"bench-steps.50"}


def test_a_hook_reading_an_optimizer_job_sees_what_it_warm_started_from(world):
    """k=1 narrows to one point the probe measured: the optimizer, told the probe's results,
    measures nothing on it, and top_k still finds it among what the search knew."""
    w = world(hooks=None, advance_s=1.0)
    w.request("op-1", w.register(), hardware(), seed=11)
    [search] = w.of(OperationCompleted, "op-1-search")
    assert search.counts.measured + search.counts.reused == 0
    results = {e.job: e.result for e in w.of(PipelineJobCompleted, "op-1")}
    assert len(results["top"]["entity_ids"]) == 1
    [done] = w.of(OperationCompleted, "op-1")
    assert done.stop_reason == "operator_finished"
