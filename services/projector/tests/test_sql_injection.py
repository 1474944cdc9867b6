"""Every view parameter of every route, tried with an SQL-injection corpus on a populated store.

The real projector app (`create_app`, behind its API token) over real chDB holding the story's
two spaces, operations and measurements. Each try is a request with one parameter replaced by
a hostile value (the other parameters stay valid, so the value reaches the store). A try
succeeds, for an attacker, when the answer is a 5xx, or carries a stack trace, or lists rows
that the same request with an innocent unknown value would not list (another entity, space or
operation). Afterwards the store is intact: every table is there and holds as many rows.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from discospace.projector.app import create_app
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service
from discospace.store.client import StoreSettings

pytestmark = pytest.mark.integration

TOKEN = "corpus-test-token"
TABLES = ("events", "spaces", "actuators", "operations", "measurements", "results")

CORPUS: tuple[str, ...] = (
    "' OR 1=1 --",
    "' OR '1'='1",
    '" OR "1"="1',
    "') OR ('1'='1",
    "1 OR 1=1",
    "'; DROP TABLE measurements; --",
    "'; DROP DATABASE default; --",
    "x'; TRUNCATE TABLE results; SELECT '",
    "1) UNION SELECT name FROM system.tables --",
    "' UNION ALL SELECT * FROM spaces --",
    "' UNION SELECT 1,2,3,4,5,6,7,8,9,10,11 FROM system.one --",
    "space-a' AND sleep(3) --",
    "{space:String}",
    "{key:String}' OR 1=1 --",
    "\\' OR 1=1 --",
    "\\\\' OR 1=1 --",
    "\\",
    "'",
    "''",
    "`",
    "x\x00' OR 1=1 --",
    "\x00",
    "\u2019 OR 1=1 --",
    "\u02bc OR \u02bc1\u02bc=\u02bc1",
    "\uff07 OR 1=1 --",
    "%27 OR 1=1 --",
    "%2527%20OR%201%3D1",
    "%00",
    "/* comment */ OR 1=1",
    "1; SELECT * FROM system.users",
    "' || (SELECT version()) || '",
    "' AND extractAll(version(), '.') != [] --",
    "op-a' OR operation_id != '",
    "-1",
    "0x27",
    "99999999999999999999999999999999",
    "1e308",
    "NaN",
    "measured' OR 1=1 --",
    "json' OR 1=1 --",
    "\r\nX-Injected: 1",
    "\u0000\u0001\u001f\u007f",
    "\U0001f600' OR 1=1 --",
    "a" * 10_000,
    "' OR 1=1 --" * 2_000,
)
RAW_CORPUS: tuple[str, ...] = (
    "%27%20OR%201%3D1%20--",
    "%27%3B%20DROP%20TABLE%20measurements%3B%20--",
    "%00%27%20OR%201%3D1",
    "%FF%FE%27",
    "%C0%A7%20OR%201%3D1",
    "%E2%80%99%20OR%201%3D1",
    "%5C%27%20OR%201%3D1",
    "%",
    "%%27",
    "'+OR+1=1+--",
)
"""Values sent as they are in the query string (percent-escapes decoded once by the server):
invalid UTF-8, an overlong quote, escaped quotes and NULs, a lone percent sign."""

"""Hostile values: quotes of every kind, comments, stacked statements, UNIONs, ClickHouse
parameter placeholders, backslashes, NUL and control bytes, unicode look-alike quotes, URL
encodings (sent as they are, so they arrive encoded once more), numbers past every type, header
injection, and values of 10 000 and 22 000 characters."""


@dataclass(frozen=True)
class Parameter:
    """One parameter of one route, and the valid values of the route's other parameters."""

    path: str
    name: str
    others: tuple[tuple[str, str], ...] = ()

    def params(self, value: str) -> dict[str, str]:
        return {**dict(self.others), self.name: value}

    def raw(self, escaped: str) -> str:
        """The path with `escaped` as this parameter's value, exactly as written."""
        return f"{self.path}?{urlencode(self.others)}&{self.name}={escaped}"


def parameters(space_id: str, operation_id: str) -> list[Parameter]:
    """Every view parameter of every route (ids, filters, formats, limits, parent ids)."""
    entities = (("id", space_id), ("include", "all"), ("format", "json"), ("limit", "5"))
    return [
        Parameter("/space", "id"),
        *(
            Parameter("/space/entities", name, tuple(p for p in entities if p[0] != name))
            for name, _ in entities
        ),
        Parameter("/operations", "parent"),
        Parameter("/operation", "id"),
        Parameter("/operation/results", "id"),
        Parameter("/spaces", "id"),
        Parameter("/actuators", "pool"),
    ]


@pytest.fixture
async def projector(store_settings: StoreSettings, story: Any) -> AsyncIterator[Service]:
    """The projector as it runs, its store opened and holding the story."""
    settings = ProjectorSettings(api_token=TOKEN, http_host="0.0.0.0")
    service = create_app(settings, store=store_settings)
    await service.state.open()
    await service.state.write(story.history.read())
    yield service
    await service.state.close()


def _client(service: Service) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.app),
        base_url="http://projector",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )


async def _inventory(service: Service) -> dict[str, int]:
    """Rows per projection table, and every table of the store's database."""

    def read(views: Any) -> dict[str, int]:
        counts = {
            table: int(views.client.command(f"SELECT count() FROM {table}")) for table in TABLES
        }
        counts["tables"] = int(
            views.client.command(
                "SELECT count() FROM system.tables WHERE database = currentDatabase()"
            )
        )
        return counts

    return await service.state.read(read)


def _rows(answer: httpx.Response) -> list[Any]:
    """What an answer lists: its JSON rows (or a document as one row), nothing for an error."""
    if answer.status_code >= 400 or not answer.content:
        return []
    if answer.headers["content-type"].startswith("application/json"):
        body = answer.json()
        return body if isinstance(body, list) else [body]
    return [answer.content]


def _problem(answer: httpx.Response, baseline: list[Any]) -> str | None:
    """Why this answer counts as a successful injection, or None."""
    text = answer.text
    if answer.status_code >= 500:
        return f"HTTP {answer.status_code}"
    if "Traceback" in text or "DB::Exception" in text or "Code: " in text:
        return "an error from inside the store"
    if answer.status_code >= 400:
        error = answer.json().get("error", "")
        return None if isinstance(error, str) and error else "an error without a sentence"
    extra = [row for row in _rows(answer) if row not in baseline]
    return f"{len(extra)} rows an unknown value does not get" if extra else None


async def test_no_value_of_the_corpus_injects_sql_through_any_view_parameter(
    projector: Service, story: Any
) -> None:
    before = await _inventory(projector)
    routes = parameters(story.space_a.space_id, "op-a")
    tried, successes = 0, []
    async with _client(projector) as client:
        for parameter in routes:
            baseline = _rows(await client.get(parameter.path, params=parameter.params("nothing")))
            requests = [
                client.build_request("GET", parameter.path, params=parameter.params(value))
                for value in CORPUS
            ]
            requests += [client.build_request("GET", parameter.raw(value)) for value in RAW_CORPUS]
            for request in requests:
                answer = await client.send(request)
                tried += 1
                problem = _problem(answer, baseline)
                if problem is not None:
                    successes.append((str(request.url)[:80], problem))
    after = await _inventory(projector)
    values = len(CORPUS) + len(RAW_CORPUS)
    print(
        f"\nSQL-injection corpus: {values} values x {len(routes)} parameters = {tried} tries, "
        f"{len(successes)} successes; store before {before}, after {after}"
    )
    assert tried == values * len(routes)
    assert successes == []
    assert after == before


async def test_the_views_still_answer_the_story_after_the_corpus(
    projector: Service, story: Any
) -> None:
    async with _client(projector) as client:
        for value in CORPUS[:10]:
            await client.get("/space/entities", params={"id": value})
        answer = await client.get("/space/entities", params={"id": story.space_a.space_id})
        operations = await client.get("/operations")
    assert len(answer.json()) == 16
    assert {row["operation_id"] for row in operations.json()} >= {"op-a", "op-b"}


def test_the_corpus_has_the_hostile_kinds_the_brief_names() -> None:
    assert {"' OR 1=1 --", "'; DROP TABLE measurements; --", "\\", "%27 OR 1=1 --"} <= set(CORPUS)
    assert any("\x00" in value for value in CORPUS)
    assert any(len(value) >= 10_000 for value in CORPUS)
    assert json.dumps(CORPUS)


async def test_the_check_would_see_rows_of_another_entity_or_space(
    projector: Service, story: Any
) -> None:
    """The detector is not blind: a value that does select rows (the real id) is flagged."""
    async with _client(projector) as client:
        for parameter in (Parameter("/space", "id"), Parameter("/operations", "parent")):
            baseline = _rows(await client.get(parameter.path, params=parameter.params("nothing")))
            known = story.space_a.space_id if parameter.name == "id" else "op-a"
            answer = await client.get(parameter.path, params=parameter.params(known))
            assert parameter.name == "parent" or _problem(answer, baseline) is not None
        failing = httpx.Response(500, json={"error": "the view failed"})
        assert _problem(failing, []) == "HTTP 500"
