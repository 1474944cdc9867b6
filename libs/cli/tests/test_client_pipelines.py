"""A pipeline through `discospace.client` and the CLI against the projector's real routes and
views, over a chDB store holding a hand-made pipeline history, served over HTTP by uvicorn."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import uvicorn
from faststream.asgi import AsgiFastStream
from typer.testing import CliRunner

from discospace.cli.main import app
from discospace.client import Client, NotAPipelineError
from discospace.core import (
    DiscoverySpace,
    Entity,
    ExperimentRef,
    ExperimentSpec,
    PropertySpec,
    SpaceSpec,
)
from discospace.events import (
    Event,
    MeasurementCompleted,
    Objective,
    OperationCompleted,
    OperationCounts,
    OperationParameters,
    OperationRequested,
    OperationStarted,
    PipelineJobCompleted,
    PipelineJobStarted,
    SpaceRegistered,
    measurement_request_id,
)
from discospace.projector.reading import StoreViews
from discospace.projector.routes import view_routes
from discospace.projector.writing import Projection, ReadEvent
from discospace.store.events import EventRecord
from discospace.testing.kafka import free_port

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
RECIPE = ExperimentSpec(
    actuator="Recipe",
    experiment="train",
    target_properties=("held_out_loss", "kept_fraction"),
    required_properties=("min_len",),
)
LOSS = Objective(property="held_out_loss", direction="min")


def _space(values: tuple[int, ...]) -> SpaceSpec:
    return SpaceSpec(
        sample_store="pipeline-store",
        entity_space=(PropertySpec(name="min_len", values=values),),
        measurement_space=(ExperimentRef(actuator="Recipe", experiment="train"),),
    )


RAW, NARROWED = _space((0, 10, 20, 40)), _space((10, 20))
RAW_ID, NARROWED_ID = DiscoverySpace.from_spec(RAW).id, DiscoverySpace.from_spec(NARROWED).id


class History:
    """Events as the explorer, sampler and actuators would write them, a second apart."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.now = T0

    def add(self, event: Event) -> Any:
        self.events.append(event)
        return event

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def register(self, spec: SpaceSpec, space_id: str) -> None:
        self.add(
            SpaceRegistered(
                event_id=f"registered-{space_id}",
                occurred_at=self.tick(),
                submission_id=f"sub-{space_id}",
                space_id=space_id,
                spec=spec,
                experiments=(RECIPE,),
            )
        )

    def start(self, operation_id: str, space_id: str, operator: str, **more: Any) -> Any:
        parent = more.pop("parent", None)
        parameters = OperationParameters(seed=3, objective=LOSS, **more)
        requested = self.add(
            OperationRequested(
                event_id=f"requested-{operation_id}",
                occurred_at=self.tick(),
                operation_id=operation_id,
                space_id=space_id,
                operator=operator,
                parameters=parameters,
                requested_by="alice",
                parent_operation_id=parent,
            )
        )
        return self.add(
            OperationStarted.caused_by(
                requested,
                self.tick(),
                operation_id=operation_id,
                space_id=space_id,
                operator=operator,
                parameters=parameters,
            )
        )

    def measure(self, started: OperationStarted, min_len: int, loss: float, kept: float) -> None:
        entity_id = Entity.of({"min_len": min_len}).id
        self.add(
            MeasurementCompleted.caused_by(
                started,
                self.tick(),
                index=min_len,
                operation_id=started.operation_id,
                request_id=measurement_request_id(started.operation_id, entity_id, "train"),
                space_id=started.space_id,
                sample_store="pipeline-store",
                entity_id=entity_id,
                entity_values={"min_len": min_len},
                experiment_id="train",
                worker_id="cpu-0",
                values={"held_out_loss": loss, "kept_fraction": kept},
                is_valid=True,
                uncertainty={},
                duration_seconds=1.0,
            )
        )

    def finish(self, started: OperationStarted, measured: int) -> None:
        self.add(
            OperationCompleted.caused_by(
                started,
                self.tick(),
                operation_id=started.operation_id,
                space_id=started.space_id,
                stop_reason="operator_finished",
                stop_detail="done",
                counts=OperationCounts(
                    requested=measured, measured=measured, reused=0, failed=0, invalid=0
                ),
            )
        )

    def job(self, pipeline: OperationStarted, stage: str, name: str, **more: Any) -> None:
        result = more.pop("result")
        fields = {"operation_id": pipeline.operation_id, "job": name, "stage": stage}
        self.add(
            PipelineJobStarted.caused_by(
                pipeline, self.tick(), index=len(self.events), **fields, **more
            )
        )
        self.add(
            PipelineJobCompleted.caused_by(
                pipeline, self.tick(), index=len(self.events), **fields, result=result
            )
        )


OPTIONS = {
    "stages": {
        "probe": [{"name": "probe", "kind": "operation", "operator": "random_walk"}],
        "refine": [{"name": "narrow", "kind": "hook", "hook": "k_sigma", "args": {"job": "probe"}}],
        "execute": [
            {"name": "train", "kind": "operation", "operator": "random_walk",
             "space": "${narrow.space_id}"}
        ],
    }
}  # fmt: skip


def _history() -> list[Event]:
    """Pipeline `op-p` on the raw space: its probe measured 0 and 40, k_sigma narrowed to 10
    and 20, its training run on the narrowed space measured both: a lower loss."""
    history = History()
    history.register(RAW, RAW_ID)
    history.register(NARROWED, NARROWED_ID)
    pipeline = history.start("op-p", RAW_ID, "pipeline", options=OPTIONS)
    probe = history.start("op-p-probe", RAW_ID, "random_walk", parent="op-p", number_entities=2)
    history.measure(probe, 0, loss=3.2, kept=1.0)
    history.measure(probe, 40, loss=3.0, kept=1.0)
    history.finish(probe, 2)
    history.job(pipeline, "probe", "probe", child_operation_id="op-p-probe", result={})
    history.job(pipeline, "refine", "narrow", result={"space_id": NARROWED_ID})
    train = history.start("op-p-train", NARROWED_ID, "random_walk", parent="op-p")
    history.measure(train, 10, loss=2.7, kept=0.8)
    history.measure(train, 20, loss=2.6, kept=0.6)
    history.finish(train, 2)
    history.job(pipeline, "execute", "train", child_operation_id="op-p-train", result={})
    history.finish(pipeline, 4)
    return history.events


@pytest.fixture
def projector_url(chdb_store_client) -> Iterator[str]:
    """The projector's routes over a chDB store holding `_history()`, served on a free port."""
    events = _history()
    records = [EventRecord.of(e, topic="t", partition=0, offset=i) for i, e in enumerate(events)]
    Projection(chdb_store_client, "projector").write(
        [ReadEvent(e, r) for e, r in zip(events, records, strict=True)]
    )
    views = StoreViews(chdb_store_client)

    async def call(function):
        return await asyncio.to_thread(function, views)

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            AsgiFastStream(asgi_routes=view_routes(call)),
            host="127.0.0.1",
            port=port,
            lifespan="off",
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_the_client_reads_a_pipelines_jobs_children_and_comparison(projector_url) -> None:
    with Client(projector_url) as client:
        pipeline = client.pipeline("op-p")
        children = client.children("op-p")
        comparison = client.pipeline_comparison("op-p")
        with pytest.raises(NotAPipelineError):
            client.pipeline_comparison("op-p-probe")
    assert [(job.stage, job.job, job.status) for job in pipeline.jobs] == [
        ("probe", "probe", "completed"),
        ("refine", "narrow", "completed"),
        ("execute", "train", "completed"),
    ]
    assert pipeline.jobs[2].child is not None
    assert (pipeline.jobs[2].child.done, pipeline.jobs[2].child.total) == (2, 2)
    assert [child.operation_id for child in children] == ["op-p-probe", "op-p-train"]
    objective = comparison.objective
    assert objective is not None
    assert objective.baseline is not None
    assert objective.refined is not None
    assert (objective.baseline.value, objective.refined.value, objective.better) == (
        3.0,
        2.6,
        True,
    )
    assert objective.refined.entity_values == {"min_len": 20}
    kept = next(t for t in comparison.targets if t.target == "kept_fraction")
    assert (kept.before.mean, kept.execute.mean if kept.execute else None) == (1.0, 0.7)


def test_the_cli_prints_what_the_client_reads(projector_url) -> None:
    runner = CliRunner()
    base = ["--projector", projector_url]
    compared = runner.invoke(app, [*base, "pipeline", "compare", "op-p", "--json"])
    shown = runner.invoke(app, [*base, "operation", "show", "op-p"], env={"COLUMNS": "200"})
    refused = runner.invoke(app, [*base, "pipeline", "compare", "op-p-train"])
    assert compared.exit_code == 0, compared.output
    with Client(projector_url) as client:
        expected = client.pipeline_comparison("op-p").model_dump(mode="json")
    assert json.loads(compared.stdout) == expected
    assert shown.exit_code == 0, shown.output
    assert "op-p-train" in shown.stdout
    assert "2/2" in shown.stdout
    assert (refused.exit_code, refused.stderr) == (
        2,
        "error: operation op-p-train is not a pipeline (its operator is random_walk).\n",
    )
