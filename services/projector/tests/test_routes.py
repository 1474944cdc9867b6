"""The HTTP API, mounted on FastStream's ASGI app as the service mounts it, over a real store."""

from __future__ import annotations

import asyncio
import io
import json

import httpx
import pandas as pd
import pytest
from faststream.asgi import AsgiFastStream

from discospace.projector.reading import StoreViews
from discospace.projector.routes import view_routes
from discospace.projector.writing import Projection
from discospace.store.errors import StoreError

pytestmark = pytest.mark.integration


def _client(call) -> httpx.AsyncClient:
    app = AsgiFastStream(asgi_routes=view_routes(call))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://projector")


@pytest.fixture
async def api(chdb_store_client, story):
    Projection(chdb_store_client, "projector").write(story.history.read())
    views = StoreViews(chdb_store_client)

    async def call(function):
        return await asyncio.to_thread(function, views)

    async with _client(call) as client:
        yield client


async def test_spaces_are_listed_as_json(api, story) -> None:
    answer = await api.get("/spaces")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    statuses = {space["space_id"]: space["status"] for space in answer.json()}
    assert statuses[story.space_a.space_id] == "registered"
    assert statuses[story.rejected.space_id] == "rejected"


async def test_one_space_answers_with_its_spec(api, story) -> None:
    answer = await api.get("/space", params={"id": story.space_a.space_id})
    assert answer.json()["spec"]["sample_store"] == "fms-test"
    assert answer.json()["size"] == 16


async def test_a_view_exports_as_csv_with_a_header_of_every_column(api, story) -> None:
    answer = await api.get(
        "/space/entities",
        params={"id": story.space_a.space_id, "include": "measured", "format": "csv"},
    )
    assert answer.headers["content-type"].startswith("text/csv")
    lines = answer.text.splitlines()
    assert lines[0] == (
        "entity_id,model_name,batch_size,number_gpus,train_tokens_per_second,"
        "peak_gpu_memory_mib,status,reason"
    )
    assert len(lines) == 3
    filename = f"{story.space_a.space_id}-measured.csv"
    assert answer.headers["content-disposition"] == f'attachment; filename="{filename}"'


async def test_a_view_exports_as_json_rows(api, story) -> None:
    answer = await api.get("/space/entities", params={"id": story.space_a.space_id})
    rows = answer.json()
    assert len(rows) == 16
    unmeasured = [row for row in rows if row["status"] == "unmeasured"]
    assert {row["train_tokens_per_second"] for row in unmeasured} == {None}


async def test_a_view_exports_as_parquet_that_reads_back_the_same_table(api, story) -> None:
    params = {"id": story.space_a.space_id, "format": "parquet"}
    parquet = pd.read_parquet(io.BytesIO((await api.get("/space/entities", params=params)).content))
    rows = (await api.get("/space/entities", params={"id": story.space_a.space_id})).json()
    assert len(parquet) == len(rows) == 16
    assert list(parquet["entity_id"]) == [row["entity_id"] for row in rows]
    assert parquet["batch_size"].dtype.kind == "i"


async def test_a_limit_caps_the_rows_of_a_view(api, story) -> None:
    params = {"id": story.space_a.space_id, "include": "unsampled", "limit": "4"}
    assert len((await api.get("/space/entities", params=params)).json()) == 4


async def test_operations_and_their_progress_are_served(api) -> None:
    listed = {op["operation_id"] for op in (await api.get("/operations")).json()}
    assert listed == {"op-a", "op-b", "op-other"}
    progress = (await api.get("/operation", params={"id": "op-a"})).json()
    assert (progress["status"], progress["done"], progress["total"]) == ("running", 4, 6)
    assert progress["best"]["value"] == 3000.5


async def test_an_operations_results_are_served_oldest_first_once_each(api, story) -> None:
    results = (await api.get("/operation/results", params={"id": "op-a"})).json()

    assert sorted(r["is_valid"] for r in results) == [False, True, True]
    assert all(not r["reused"] for r in results)
    assert results[0]["occurred_at"] <= results[-1]["occurred_at"]
    assert (await api.get("/operation/results", params={"id": "op-none"})).status_code == 404


async def test_actuators_are_served_with_their_catalogs(api) -> None:
    (pool,) = (await api.get("/actuators")).json()
    assert (pool["pool"], pool["workers"]) == ("a100", ["w0", "w1"])


@pytest.mark.parametrize(
    ("path", "params", "status", "sentence"),
    [
        ("/space", {"id": "space-nope"}, 404, "space 'space-nope' is not known to the projector."),
        (
            "/operation",
            {"id": "op-nope"},
            404,
            "operation 'op-nope' is not known to the projector.",
        ),
        ("/space", {}, 400, "the query parameter 'id' is missing."),
        ("/space/entities", {"id": "x", "format": "xlsx"}, 400, "format 'xlsx' is not one of"),
        ("/space/entities", {"id": "x", "include": "some"}, 400, "include 'some' is not one of"),
        ("/space/entities", {"id": "x", "limit": "-1"}, 400, "limit must be a whole number"),
        ("/space", {"id": ""}, 400, "the query parameter 'id' is empty."),
        ("/space/entities", {"id": "x", "include": ""}, 400, "the query parameter 'include' is"),
        ("/space/entities", {"id": "x", "format": ""}, 400, "the query parameter 'format' is"),
        ("/space/entities", {"id": "x", "limit": ""}, 400, "the query parameter 'limit' is"),
        ("/operations", {"parent": ""}, 400, "the query parameter 'parent' is empty."),
        (
            "/space/entities",
            {"id": "x", "includ": "measured"},
            400,
            "/space/entities does not take the query parameter 'includ'; it takes id, include, "
            "limit, format.",
        ),
        (
            "/spaces",
            {"id": "x"},
            400,
            "/spaces does not take the query parameter 'id'; it takes no parameter.",
        ),
        (
            "/space/entities",
            [("id", "x"), ("include", "measured"), ("include", "unsampled")],
            400,
            "the query parameter 'include' is given 2 times.",
        ),
    ],
)
async def test_bad_requests_answer_one_sentence(api, path, params, status, sentence) -> None:
    answer = await api.get(path, params=params)
    assert answer.status_code == status
    assert answer.json()["error"].startswith(sentence)


async def test_only_reading_is_allowed(api) -> None:
    answer = await api.post("/spaces")
    assert answer.status_code == 405
    assert answer.json() == {"error": "POST is not allowed here: use GET."}


async def test_a_store_that_cannot_be_read_answers_503_with_the_reason() -> None:
    async def broken(function):
        raise StoreError("Cannot reach ClickHouse at http://ch:8123: connection refused.")

    async with _client(broken) as client:
        answer = await client.get("/spaces")
    assert answer.status_code == 503
    assert answer.json()["error"] == (
        "the store cannot be read: Cannot reach ClickHouse at http://ch:8123: connection refused."
    )


async def test_an_unexpected_failure_answers_500_without_a_traceback() -> None:
    async def failing(function):
        raise KeyError("internal detail")

    async with _client(failing) as client:
        answer = await client.get("/operations")
    assert answer.status_code == 500
    assert "internal detail" not in answer.text
    assert json.loads(answer.text)["error"].startswith("the view failed")


@pytest.mark.parametrize(
    ("path", "parameters"),
    [
        ("/space", {"id": "x" * 10_000}),
        ("/operation", {"id": "x" * 10_000}),
        ("/space/entities", {"id": "x", "include": "x" * 10_000}),
        ("/space/entities", {"id": "x", "format": "x" * 10_000}),
    ],
)
async def test_a_long_value_is_cut_in_the_error_sentence(api, path, parameters) -> None:
    answer = await api.get(path, params=parameters)
    assert answer.status_code in (400, 404)
    error = answer.json()["error"]
    assert "x…'" in error
    assert len(error) < 250
