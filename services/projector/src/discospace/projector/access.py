"""Who may read the projector's views: the address it listens on, and its bearer token.

- `api_token`: the token from the settings (`api_token`, else the file `api_token_file`), or
  None; a file that cannot be read, or an empty token, is a `AccessSettingsError`.
- `check_exposure`: refuses, at start, to serve the views on an address other than loopback
  without a token, unless `allow_unauthenticated` says it is meant.
- `Guarded`: an ASGI app that answers 401 with one sentence unless the request carries
  `Authorization: Bearer <token>`, compared in constant time; the projector wraps every view
  in it, and never /health or /metrics (probes and Prometheus carry no token).
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import TYPE_CHECKING

from discospace.core.errors import DiscospaceError

if TYPE_CHECKING:
    from discospace.projector.routes import ASGIApp, Receive, Scope, Send
    from discospace.projector.settings import ProjectorSettings

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
TOKEN_ENV = "DISCOSPACE_PROJECTOR_API_TOKEN"
CHALLENGE = (b"www-authenticate", b'Bearer realm="discospace projector"')


class AccessSettingsError(DiscospaceError):
    """The projector's access settings would expose its views, or name a token it cannot read."""


def api_token(settings: ProjectorSettings) -> bytes | None:
    """The token every view asks for, or None when none is configured."""
    if settings.api_token is not None:
        return _non_empty(settings.api_token.get_secret_value(), "api_token")
    if settings.api_token_file is None:
        return None
    try:
        text = settings.api_token_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise AccessSettingsError(
            f"the API token file {settings.api_token_file} cannot be read ({reason})."
        ) from None
    return _non_empty(text, f"the API token file {settings.api_token_file}")


def _non_empty(token: str, where: str) -> bytes:
    """The token as a request's header carries it: printable ASCII, as the client requires
    (a second line in a token file, or a character beyond ASCII, made a token no request can
    send: every view answered 401 to everyone)."""
    stripped = token.strip()
    if not stripped:
        raise AccessSettingsError(f"{where} is empty; give a token, or leave it unset.")
    if not (stripped.isascii() and stripped.isprintable()):
        raise AccessSettingsError(
            f"{where} holds a line break, another control character or a character beyond "
            "ASCII, which no request's header can carry; give a token of printable ASCII."
        )
    return stripped.encode("utf-8")


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: ProjectorSettings, token: bytes | None) -> None:
    """Refuse to serve the views on another address than loopback without a token."""
    if token is not None or settings.allow_unauthenticated or is_loopback(settings.http_host):
        return
    raise AccessSettingsError(
        f"the projector would serve its views to anyone reaching {settings.http_host} without "
        f"a token: set {TOKEN_ENV} (or _API_TOKEN_FILE), or "
        "DISCOSPACE_PROJECTOR_ALLOW_UNAUTHENTICATED=true if something in front authenticates."
    )


def bearer_token(scope: Scope) -> bytes | None:
    """The token of the request's `Authorization: Bearer <token>` header, if it has one."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            scheme, _, token = bytes(value).strip().partition(b" ")
            if scheme.lower() == b"bearer" and token.strip():
                return token.strip()
            return None
    return None


class Guarded:
    """`app`, answered only to requests that carry the token (401 with a sentence otherwise)."""

    def __init__(self, app: ASGIApp, token: bytes) -> None:
        self.app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        sent = bearer_token(scope)
        if sent is not None and hmac.compare_digest(sent, self._token):
            await self.app(scope, receive, send)
            return
        await _refuse(send, missing=sent is None, head=scope.get("method") == "HEAD")


async def _refuse(send: Send, *, missing: bool, head: bool) -> None:
    """401 with one sentence; the same answer whatever a wrong token was."""
    sentence = (
        b"this view needs the projector's API token: send 'Authorization: Bearer <token>'."
        if missing
        else b"the API token sent is not the projector's."
    )
    body = b'{"error": "' + sentence + b'"}'
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        CHALLENGE,
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


def guard(app: ASGIApp, token: bytes | None) -> ASGIApp:
    """`app` behind the token, or `app` itself when no token is configured."""
    return app if token is None else Guarded(app, token)
