"""The shipped hardware pipeline (`examples/pipelines/hardware.yaml`) end to end: every service
as its own process, a real `cpu_train` worker training on this CPU, the real broker and chDB,
driven through the `discospace` command as a user would run it.

It checks what the issue asks of the example: the pipeline completes; its refined spaces are
registered spaces on the same sample store, whose views show the probe's measurements as
measured elsewhere (reused, not measured again); the top 3 are measured again, as separate
measurements, with the longer parameterization.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.core import DiscoverySpace, SpaceSpec
from discospace.events import (
    Event,
    MeasurementCompleted,
    OperationRequested,
    PipelineJobCompleted,
    PipelineJobStarted,
)
from discospace.testing.loop import REPO, Loop

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "examples" / "pipelines"
JOBS = ["probe", "pruned", "narrowed", "search", "top", "longer"]
SHORT = "train-duration.1sec-memory_cap_mb.64"
LONGER = "train-duration.5sec-memory_cap_mb.64"


@pytest.fixture(scope="module")
def loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("hardware-pipeline"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator("cpu-worker", "cpu", {}, DISCOSPACE_ACTUATOR_ACTUATOR="cpu_train")
        running.wait_healthy()
        running.wait_for_catalog({"cpu_train"})
        yield running
    finally:
        running.stop()


def create_space(loop: Loop, path: Path) -> str:
    return loop.cli_ok("space", "create", "-f", str(path)).strip()


def view(loop: Loop, space_id: str, include: str) -> list[dict[str, Any]]:
    return list(loop.cli_json("space", "show", space_id, "--include", include, "--format", "json"))


def registered(loop: Loop, space_id: str) -> dict[str, Any]:
    """What the projector knows of a space (status, sample store, spec)."""
    return dict(loop.cli_json("space", "get", space_id, "--json"))


def inside(spec: SpaceSpec, values: dict[str, Any]) -> bool:
    return DiscoverySpace.from_spec(spec).entity_space.why_not(values) is None


@pytest.fixture(scope="module")
def ran(loop: Loop) -> dict[str, Any]:
    """The shipped example run once: its id, how long it took, what `operation show` says."""
    space_id = create_space(loop, EXAMPLES / "hardware-space.yaml")
    started = time.monotonic()
    answer = loop.cli(
        "operation",
        "create",
        "-f",
        str(EXAMPLES / "hardware.yaml"),
        "--space",
        space_id,
        "--watch",
        timeout_s=600,
    )
    elapsed = time.monotonic() - started
    assert answer.returncode == 0, answer.stdout[-3000:] + answer.stderr + loop.logs()
    operation_id = answer.stdout.strip().splitlines()[0]
    print(f"hardware.yaml: {operation_id} ended in {elapsed:.1f} s")
    shown = loop.cli_json("operation", "show", operation_id, "--json")
    events = loop.events(loop.topics.operations)
    print(job_times(events, operation_id))
    return {"space_id": space_id, "id": operation_id, "show": shown, "events": events}


def job_times(events: list[Event], operation_id: str) -> str:
    """Each job's seconds from its start to its end (the figures the README quotes)."""
    starts = {
        e.job: e.occurred_at
        for e in events
        if isinstance(e, PipelineJobStarted) and e.operation_id == operation_id
    }
    ends = {
        e.job: e.occurred_at
        for e in events
        if isinstance(e, PipelineJobCompleted) and e.operation_id == operation_id
    }
    return ", ".join(
        f"{job} {(ends[job] - starts[job]).total_seconds():.1f} s" for job in starts if job in ends
    )


def job_results(ran: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        e.job: e.result
        for e in ran["events"]
        if isinstance(e, PipelineJobCompleted) and e.operation_id == ran["id"]
    }


def test_the_hardware_example_completes_every_job_once_in_order(ran: dict[str, Any]):
    started = [
        e.job
        for e in ran["events"]
        if isinstance(e, PipelineJobStarted) and e.operation_id == ran["id"]
    ]
    children = [
        e.operation_id
        for e in ran["events"]
        if isinstance(e, OperationRequested) and e.parent_operation_id == ran["id"]
    ]

    assert ran["show"]["status"] == "completed", ran["show"]
    assert started == JOBS
    assert list(job_results(ran)) == JOBS
    assert [job["status"] for job in ran["show"]["jobs"]] == ["completed"] * len(JOBS)
    # Each child is keyed by its own id: the topic's partitions do not keep their order.
    assert sorted(children) == [f"{ran['id']}-{job}" for job in ("longer", "probe", "search")]


def test_the_refined_spaces_are_registered_on_the_store_and_reuse_what_the_probe_measured(
    loop: Loop, ran: dict[str, Any]
):
    results = job_results(ran)
    probed = {
        e.entity_id: e
        for e in loop.events(loop.topics.measurements, f"{ran['id']}-probe")
        if isinstance(e, MeasurementCompleted)
    }
    print(f"pruned: {results['pruned']['pruned']}, narrowed: {results['narrowed']['narrowed']}")
    base = registered(loop, ran["space_id"])

    assert len(probed) == 12
    assert any(not e.is_valid for e in probed.values()), "the 64 MiB cap makes some invalid"
    for job in ("pruned", "narrowed"):
        space_id = results[job]["space_id"]
        spec = SpaceSpec.model_validate(results[job]["space"])
        described = registered(loop, space_id)
        expected = {
            entity_id
            for entity_id, e in probed.items()
            if e.is_valid and inside(spec, dict(e.entity_values))
        }
        reused = {row["entity_id"] for row in view(loop, space_id, "elsewhere")}

        assert space_id != ran["space_id"]
        assert described["status"] == "registered"
        assert described["sample_store"] == base["sample_store"] == "cpu-train-pipeline"
        assert expected, f"{job} keeps none of the probe's valid entities"
        assert expected <= reused, f"{job}: {sorted(expected - reused)} not shown as reused"
    pruned = results["pruned"]["pruned"]
    assert pruned.get("model_size") == ["large"] or not any(
        e.entity_values["model_size"] == "large" for e in probed.values()
    )


def test_the_top_3_are_measured_again_as_separate_measurements_with_the_longer_run(
    loop: Loop, ran: dict[str, Any]
):
    results = job_results(ran)
    top = results["top"]
    measurements = list(
        {
            e.event_id: e
            for e in loop.events(loop.topics.measurements)
            if isinstance(e, MeasurementCompleted)
        }.values()
    )
    longer = [e for e in measurements if e.operation_id == f"{ran['id']}-longer"]
    short = {e.entity_id for e in measurements if e.experiment_id == SHORT and e.is_valid}

    assert len(top["entity_ids"]) == 3
    assert sorted(e.entity_id for e in longer) == sorted(top["entity_ids"])
    assert {e.experiment_id for e in longer} == {LONGER}
    assert all(e.is_valid for e in longer), [e.invalid_reason for e in longer]
    assert set(top["entity_ids"]) <= short, "each was first measured with the short run"
    assert results["longer"]["experiment"] == LONGER
    assert results["longer"]["counts"]["measured"] == 3
    assert all(e.values["train_runtime"] > 4 for e in longer), "5 s of training each"
    per_pair = Counter((e.entity_id, e.experiment_id) for e in measurements)
    assert set(per_pair.values()) == {1}, "no configuration trained twice with one experiment"
    measured_longer = view(loop, results["longer"]["space_id"], "measured")
    assert sorted(row["entity_id"] for row in measured_longer) == sorted(top["entity_ids"])


def test_the_example_files_parse_as_written(ran: dict[str, Any]):
    pipeline = yaml.safe_load((EXAMPLES / "hardware.yaml").read_text())
    assert pipeline["operator"] == "pipeline"
    assert json.dumps(ran["show"]["parameters"]["options"]["stages"], sort_keys=True) == (
        json.dumps(pipeline["stages"], sort_keys=True)
    )
