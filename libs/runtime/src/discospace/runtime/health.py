"""/health: 200 while the service reaches its Kafka broker, 503 otherwise."""

from __future__ import annotations

import json
from typing import Any

from faststream.asgi import AsgiResponse, get
from faststream.asgi.handlers import GetHandler
from faststream.asgi.types import Scope
from faststream.kafka import KafkaBroker


def _json(status: int, body: dict[str, Any]) -> AsgiResponse:
    return AsgiResponse(
        json.dumps(body).encode(), status, headers={"content-type": "application/json"}
    )


def make_health(broker: KafkaBroker, service: str, timeout_s: float) -> GetHandler:
    """The /health handler of `service`; it asks the broker for its cluster description."""

    @get(include_in_schema=False)
    async def health(scope: Scope) -> AsgiResponse:
        if await broker.ping(timeout_s):
            return _json(200, {"service": service, "status": "ok", "kafka": "connected"})
        return _json(503, {"service": service, "status": "unavailable", "kafka": "unreachable"})

    return health
