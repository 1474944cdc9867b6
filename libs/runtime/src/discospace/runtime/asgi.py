"""Answers of a service's HTTP endpoints outside its own routes, in JSON like theirs.

FastStream's ASGI app answers a path it does not serve with a plain-text 404 ("Application
doesn't support regular HTTP protocol."), and prometheus_client's /metrics app answers any
method, POST and DELETE included, with the metrics. `ServiceApp` answers an unknown path with
`{"error": "<one sentence>"}` and 404, naming the paths it serves; `read_only` answers a
method other than GET and HEAD with 405 the same way, and `ReadHandler` (FastStream's GET
handler, as /health is, which answers other methods in plain text) does too.
"""

from __future__ import annotations

import json

from faststream.asgi import AsgiFastStream
from faststream.asgi.handlers import GetHandler
from faststream.asgi.types import ASGIApp, Receive, Scope, Send

READ_METHODS = ("GET", "HEAD")


async def send_error(scope: Scope, send: Send, status: int, sentence: str) -> None:
    """Answer `{"error": sentence}` with `status` (the body left out for HEAD)."""
    body = json.dumps({"error": sentence}).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if status == 405:
        headers.append((b"allow", b", ".join(m.encode() for m in READ_METHODS)))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send(
        {"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body}
    )


def read_only(app: ASGIApp) -> ASGIApp:
    """`app` for GET and HEAD; any other method is answered 405 in one sentence."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if await _refused(scope, send):
            return
        await app(scope, receive, send)

    return guarded


class ReadHandler(GetHandler):
    """FastStream's GET handler (registered by the app as its own: dependencies, logger,
    schema) answering a method other than GET and HEAD as `read_only` does."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if await _refused(scope, send):
            return
        await super().__call__(scope, receive, send)


async def _refused(scope: Scope, send: Send) -> bool:
    """Answer 405 for an HTTP method other than GET and HEAD; whether it did."""
    method = scope.get("method")
    if scope["type"] != "http" or method in READ_METHODS:
        return False
    await send_error(scope, send, 405, f"{method} is not allowed here: use GET.")
    return True


class ServiceApp(AsgiFastStream):
    """FastStream's ASGI app, answering a path it does not serve in JSON (404)."""

    async def not_found(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().not_found(scope, receive, send)
            return
        paths = ", ".join(sorted({path for path, _ in self.routes}))
        await send_error(
            scope, send, 404, f"nothing is served at this path; the paths are {paths}."
        )
