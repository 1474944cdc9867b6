"""The projector's HTTP API as plain ASGI apps, one per path (mounted beside /health).

Paths are fixed (FastStream's ASGI app matches exact paths), ids go in the query string:

    GET /spaces                                  every space: id, store, size, status, reason
    GET /space?id=SPACE                          one space: spec, experiments, view columns
    GET /space/entities?id=SPACE[&include=all][&limit=N][&format=json|csv|parquet]
    GET /operations[?parent=OPERATION]           every operation with its progress (or the
                                                 children a pipeline asked for)
    GET /operation?id=OPERATION                  one operation's progress (a pipeline's jobs)
    GET /actuators                               actuators, pools, catalogs, workers

Errors answer `{"error": "<one sentence>"}`: 400 for bad parameters, 404 for an unknown space
or operation, 503 when the store cannot be read; never a stack trace. A parameter the path does
not take (`includ=measured`), one given twice, or one given empty (`include=`) is a bad
parameter: none is ignored, so a typo never answers as if the parameter were absent.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qs

from pydantic import BaseModel, TypeAdapter

from discospace.projector.errors import ProjectorError, ViewError, quoted
from discospace.projector.exports import MEDIA_TYPES, export, parse_format
from discospace.projector.models import (
    ActuatorPool,
    OperationProgress,
    OperationResult,
    SpaceSummary,
)
from discospace.projector.reading import StoreViews
from discospace.projector.view import parse_include
from discospace.runtime.asgi import read_only
from discospace.store.errors import StoreError

T = TypeVar("T")
StoreCall = Callable[[Callable[[StoreViews], T]], Awaitable[T]]
"""Runs a function of the views on the store's worker thread and awaits its answer."""
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
JSON = "application/json"
MAX_COUNT = 1_000_000
"""The largest count (`limit`) a view takes. The rows of an answer are built in memory on the
store's one thread, which serves nothing else meanwhile (reads, nor the projection's writes):
10^6 never-sampled rows took 11 s and about 1 GB as Parquet; 10^9 were allowed before, which
would have held the projector for hours and beyond its memory."""
logger = logging.getLogger("discospace.projector.routes")
_SPACES = TypeAdapter(list[SpaceSummary])
_OPERATIONS = TypeAdapter(list[OperationProgress])
_ACTUATORS = TypeAdapter(list[ActuatorPool])
_RESULTS = TypeAdapter(list[OperationResult])


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, body and its media type, extra headers."""

    body: bytes
    media_type: str = JSON
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def model(cls, model: BaseModel) -> Answer:
        return cls(model.model_dump_json().encode())

    @classmethod
    def error(cls, status: int, sentence: str) -> Answer:
        return cls(TypeAdapter(dict[str, str]).dump_json({"error": sentence}), status=status)


class Query:
    """The query string of a request, read one parameter at a time."""

    def __init__(self, query_string: bytes) -> None:
        text = query_string.decode("utf-8", errors="replace")
        self._values = parse_qs(text, keep_blank_values=True)

    def check(self, path: str, takes: Sequence[str]) -> None:
        """One sentence for a parameter `path` does not take, or one given more than once."""
        for name, values in self._values.items():
            if name not in takes:
                named = f"takes {', '.join(takes)}" if takes else "takes no parameter"
                raise ViewError(
                    f"{path} does not take the query parameter {quoted(name)}; it {named}."
                )
            if len(values) > 1:
                raise ViewError(f"the query parameter {name!r} is given {len(values)} times.")

    def text(self, name: str, default: str | None = None) -> str:
        values = self._values.get(name)
        if values:
            if values[0] == "":
                raise ViewError(f"the query parameter {name!r} is empty.")
            return values[0]
        if default is None:
            raise ViewError(f"the query parameter {name!r} is missing.")
        return default

    def has(self, name: str) -> bool:
        return name in self._values

    def count(self, name: str) -> int | None:
        """A whole number from 0 to `MAX_COUNT`, in ASCII digits (`str.isdigit` takes "²")."""
        if not self.has(name):
            return None
        text = self.text(name)
        digits = text.lstrip("0") or "0"  # leading zeros write the same number
        if not (text.isascii() and text.isdigit()) or len(digits) > len(str(MAX_COUNT)):
            raise ViewError(
                f"{name} must be a whole number from 0 to {MAX_COUNT:,}, not {quoted(text)}."
            )
        if int(digits) > MAX_COUNT:
            raise ViewError(f"{name} must be a whole number from 0 to {MAX_COUNT:,}, not {text}.")
        return int(digits)


Handler = Callable[[Query], Awaitable[Answer]]


class Route:
    """One path; user errors become one-sentence JSON answers. `view_routes` mounts it behind
    the runtime's `read_only`, which answers any method but GET and HEAD (as for /metrics)."""

    def __init__(self, path: str, handler: Handler, takes: Sequence[str] = ()) -> None:
        self.path = path
        self.handler = handler
        self.takes = tuple(takes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = await self._answer(Query(scope.get("query_string", b"")))
        await _send(answer, send, head=scope.get("method") == "HEAD")

    async def _answer(self, query: Query) -> Answer:
        try:
            query.check(self.path, self.takes)
            return await self.handler(query)
        except ProjectorError as error:
            return Answer.error(error.status_code, str(error))
        except StoreError as error:
            return Answer.error(503, f"the store cannot be read: {error}")
        except Exception:
            logger.exception("a view failed")
            return Answer.error(500, "the view failed; the projector's log has the details.")


async def _send(answer: Answer, send: Send, *, head: bool) -> None:
    headers = [
        (b"content-type", answer.media_type.encode()),
        (b"content-length", str(len(answer.body)).encode()),
        *((name.encode(), value.encode()) for name, value in answer.headers),
    ]
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else answer.body})


def view_routes(call: StoreCall[Any]) -> list[tuple[str, ASGIApp]]:
    """The API's routes, each reading the store through `call`."""

    async def spaces(query: Query) -> Answer:
        return Answer(_SPACES.dump_json(await call(StoreViews.spaces)))

    async def space(query: Query) -> Answer:
        space_id = query.text("id")
        return Answer.model(await call(lambda views: views.space(space_id)))

    async def entities(query: Query) -> Answer:
        space_id, include = query.text("id"), parse_include(query.text("include", "all"))
        fmt, limit = parse_format(query.text("format", "json")), query.count("limit")
        table = await call(lambda views: views.entities(space_id, include, limit))
        name = f"{space_id}-{'-'.join(include) if len(include) < 4 else 'all'}.{fmt}"
        disposition = ("content-disposition", f'attachment; filename="{name}"')
        return Answer(export(table, fmt), MEDIA_TYPES[fmt], headers=(disposition,))

    async def operations(query: Query) -> Answer:
        parent = query.text("parent") if query.has("parent") else None
        return Answer(_OPERATIONS.dump_json(await call(lambda views: views.operations(parent))))

    async def operation(query: Query) -> Answer:
        operation_id = query.text("id")
        return Answer.model(await call(lambda views: views.operation(operation_id)))

    async def operation_results(query: Query) -> Answer:
        operation_id = query.text("id")
        results = await call(lambda views: views.operation_results(operation_id))
        return Answer(_RESULTS.dump_json(results))

    async def actuators(query: Query) -> Answer:
        return Answer(_ACTUATORS.dump_json(await call(StoreViews.actuators)))

    handlers: Sequence[tuple[str, Handler, tuple[str, ...]]] = (
        ("/spaces", spaces, ()),
        ("/space", space, ("id",)),
        ("/space/entities", entities, ("id", "include", "limit", "format")),
        ("/operations", operations, ("parent",)),
        ("/operation", operation, ("id",)),
        ("/operation/results", operation_results, ("id",)),
        ("/actuators", actuators, ()),
    )
    return [(path, read_only(Route(path, handler, takes))) for path, handler, takes in handlers]
