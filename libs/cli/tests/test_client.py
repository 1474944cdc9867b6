"""`discospace.client` against the projector's real routes, served over HTTP by uvicorn."""

from __future__ import annotations

import asyncio
import io
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import get_args

import pandas as pd
import pytest
import uvicorn
from faststream.asgi import AsgiFastStream

from discospace.client import (
    Client,
    ClientError,
    NotKnownError,
    ProjectorUnavailableError,
)
from discospace.client import models as client_models
from discospace.core import (
    DiscoverySpace,
    Entity,
    ExperimentRef,
    ExperimentSpec,
    PropertySpec,
    SpaceSpec,
)
from discospace.events import (
    ActuatorRegistered,
    Event,
    MeasurementCompleted,
    Objective,
    OperationParameters,
    OperationStarted,
    SpaceRegistered,
    measurement_request_id,
)
from discospace.projector import models as projector_models
from discospace.projector.reading import StoreViews
from discospace.projector.routes import view_routes
from discospace.projector.writing import Projection, ReadEvent
from discospace.store.events import EventRecord
from discospace.testing.kafka import free_port

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
BENCH = ExperimentSpec(
    actuator="Bench",
    experiment="bench",
    target_properties=("tps",),
    required_properties=("batch_size", "number_gpus"),
)
SPEC = SpaceSpec(
    sample_store="client-store",
    entity_space=(
        PropertySpec(name="batch_size", values=(1, 2, 4)),
        PropertySpec(name="number_gpus", values=(1, 2)),
    ),
    measurement_space=(ExperimentRef(actuator="Bench", experiment="bench"),),
)
SPACE_ID = DiscoverySpace.from_spec(SPEC).id


def _history() -> list[Event]:
    """A registered space of 6 entities, an operation that measured two of them."""
    registered = SpaceRegistered(
        event_id="registered",
        occurred_at=T0,
        submission_id="sub-1",
        space_id=SPACE_ID,
        spec=SPEC,
        experiments=(BENCH,),
    )
    actuator = ActuatorRegistered(
        event_id="actuator",
        occurred_at=T0,
        actuator="Bench",
        pool="cpu",
        experiments=(BENCH,),
        worker_id="cpu-0",
    )
    started = OperationStarted(
        event_id="started",
        occurred_at=T0 + timedelta(seconds=1),
        operation_id="op-1",
        space_id=SPACE_ID,
        operator="random_walk",
        parameters=OperationParameters(
            number_entities=2, seed=1, objective=Objective(property="tps", direction="max")
        ),
    )
    measured = [_completed(started, {"batch_size": b, "number_gpus": 1}, b * 10.0) for b in (1, 4)]
    return [registered, actuator, started, *measured]


def _completed(started: OperationStarted, values: dict, tps: float) -> MeasurementCompleted:
    entity_id = Entity.of(values).id
    return MeasurementCompleted.caused_by(
        started,
        T0 + timedelta(seconds=tps),
        index=int(tps),
        operation_id="op-1",
        request_id=measurement_request_id("op-1", entity_id, "bench"),
        space_id=SPACE_ID,
        sample_store="client-store",
        entity_id=entity_id,
        entity_values=values,
        experiment_id="bench",
        worker_id="cpu-0",
        values={"tps": tps},
        is_valid=True,
        uncertainty={},
        duration_seconds=1.0,
    )


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
    app = AsgiFastStream(asgi_routes=view_routes(call))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def client(projector_url) -> Iterator[Client]:
    with Client(projector_url) as client:
        yield client


def test_entities_come_back_as_a_dataframe_with_a_column_per_property(client) -> None:
    table = client.entities(SPACE_ID)
    assert list(table.columns) == [
        "entity_id",
        "batch_size",
        "number_gpus",
        "tps",
        "status",
        "reason",
    ]
    assert len(table) == 6
    measured = table[table["status"] == "measured"]
    assert sorted(measured["tps"]) == [10.0, 40.0]
    assert table["batch_size"].dtype.kind == "i"


def test_a_view_can_be_narrowed_and_limited(client) -> None:
    assert len(client.entities(SPACE_ID, include="unsampled")) == 4
    assert len(client.entities(SPACE_ID, include=["measured", "unsampled"], limit=3)) == 3


def test_exports_are_the_bytes_of_a_csv_json_or_parquet_file(client) -> None:
    csv = client.export(SPACE_ID, "measured", "csv")
    assert csv.decode().splitlines()[0] == "entity_id,batch_size,number_gpus,tps,status,reason"
    assert len(pd.read_json(io.BytesIO(client.export(SPACE_ID, "all", "json")))) == 6
    assert len(pd.read_parquet(io.BytesIO(client.export(SPACE_ID, "all", "parquet")))) == 6


def test_spaces_and_one_space_are_typed_models(client) -> None:
    (space,) = client.spaces()
    assert (space.space_id, space.status, space.size) == (SPACE_ID, "registered", 6)
    detail = client.space(SPACE_ID)
    assert detail.spec == SPEC
    assert detail.observed_properties == {"tps": "bench.tps"}


def test_operation_progress_has_counts_and_the_best_so_far(client) -> None:
    progress = client.operation("op-1")
    assert (progress.status, progress.done, progress.total, progress.ended) == (
        "running",
        2,
        2,
        False,
    )
    assert progress.best is not None
    assert (progress.best.value, progress.best.entity_values) == (
        40.0,
        {"batch_size": 4, "number_gpus": 1},
    )
    assert [op.operation_id for op in client.operations()] == ["op-1"]
    assert [op.operation_id for op in client.operations(SPACE_ID, status="running")] == ["op-1"]
    assert client.operations(status=["completed", "failed"]) == []
    assert client.operations(space_id="space-000000000000") == []


def test_actuators_come_with_their_pools_and_catalogs(client) -> None:
    (pool,) = client.actuators()
    assert (pool.actuator, pool.pool, pool.workers) == ("Bench", "cpu", ["cpu-0"])


def test_an_unknown_space_is_one_sentence(client) -> None:
    with pytest.raises(NotKnownError) as caught:
        client.space("x")
    assert str(caught.value) == "space 'x' is not known to the projector."


def test_a_bad_parameter_is_one_sentence(client) -> None:
    with pytest.raises(ClientError) as caught:
        client.export(SPACE_ID, "all", "xlsx")
    assert str(caught.value) == "format 'xlsx' is not one of csv, json, parquet."


def test_a_projector_that_is_not_running_is_named_with_how_to_start_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with Client(url) as client, pytest.raises(ProjectorUnavailableError) as caught:
        client.spaces()
    assert str(caught.value) == (
        f"the projector at {url} is not answering: start it with `make up`."
    )


def test_an_answer_that_cannot_be_decompressed_is_one_sentence() -> None:
    """A server at the URL saying gzip with a body that is not: httpx's DecodingError is no
    TransportError, and escaped as a traceback with exit 1."""
    import httpx

    def answer(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        return httpx.Response(200, headers=headers, content=b"this is not gzip")

    url = "http://projector.test"
    client = Client(url, transport=httpx.MockTransport(answer))
    with client, pytest.raises(ClientError) as caught:
        client.spaces()
    assert str(caught.value).startswith(
        f"the projector at {url} answered /spaces with something this client cannot read "
        "(DecodingError: "
    )


@pytest.mark.parametrize(
    "name",
    [
        "SpaceSummary",
        "SpaceDetail",
        "ActuatorPool",
        "BestSoFar",
        "OperatorChoice",
        "OperationProgress",
        "ChildProgress",
        "PipelineJob",
    ],
)
def test_the_client_reads_every_field_the_projector_writes(name: str) -> None:
    ours = getattr(client_models, name).model_fields
    theirs = getattr(projector_models, name).model_fields
    assert set(ours) == set(theirs)


def test_the_client_knows_every_status_the_projector_gives_an_operation() -> None:
    assert get_args(projector_models.OperationStatus) == client_models.OPERATION_STATUSES


def test_the_client_knows_every_status_the_projector_gives_a_pipelines_job() -> None:
    assert get_args(projector_models.JobStatus) == client_models.JOB_STATUSES


def test_the_client_counts_read_every_count_the_projector_writes() -> None:
    ours = client_models.OperationCounts.model_fields
    assert set(ours) == set(projector_models.OperationCountsView.model_fields)
