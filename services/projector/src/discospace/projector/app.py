"""The projector's wiring: every topic into the store, and the views over HTTP beside /health.

Its parts are built in `bootstrap.py`, its handler is `handlers.on_records`, its batch
subscription (resuming from the store's offsets) is in `consuming.py`, its views in
`routes.py`, and who may read them (loopback by default, a bearer token for anything else)
in `access.py`.
"""

from __future__ import annotations

from discospace.events.factory import Clock, utc_now
from discospace.projector.access import api_token, check_exposure, guard
from discospace.projector.bootstrap import bootstrap
from discospace.projector.consuming import subscribe_to_everything
from discospace.projector.routes import view_routes
from discospace.projector.settings import ProjectorSettings
from discospace.runtime import Service, create_service
from discospace.store.client import StoreSettings

DESCRIPTION = (
    "Consumes every topic into the ClickHouse sample store (chDB embedded by default, or a "
    "server at CLICKHOUSE_URL) and serves the views: entities measured through a space or "
    "elsewhere in its store, sampled but unmeasured, never sampled; operation progress."
)


def create_app(
    settings: ProjectorSettings | None = None,
    *,
    clock: Clock = utc_now,
    store: StoreSettings | None = None,
) -> Service:
    """The projector service, ready to run; the store opens when it starts.

    `service.state` is the `StoreWorker` (views and writes), for tests. Settings that would
    serve the views to other machines without a token raise `AccessSettingsError`.
    """
    settings = settings or ProjectorSettings()
    token = api_token(settings)
    check_exposure(settings, token)
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    store = store or StoreSettings()
    store.check()  # bad store settings stop the start with a sentence, before Kafka is tried
    deps = bootstrap(service, settings, store)
    service.state = deps.store
    service.on_startup(deps.store.open)
    service.on_startup(deps.buffer.start)
    service.on_shutdown(deps.buffer.stop)
    service.on_shutdown(deps.store.close)
    subscribe_to_everything(service, settings, deps)
    for path, route in view_routes(deps.store.read):
        service.app.mount(path, guard(route, token))
    return service
