"""The sampler's wiring: sample requests in; drawn entities, requests to pools, reuses out.

Spaces, pools, the memo and the first request of every slot are folded by the sampler's
followers: at start, before the broker consumes, every event of their topics up to where they
end, once (`Service.follow`); then they read on from exactly there. So no request is answered
before the memo and the first requests are known. A request is answered only when it is the
first of its operation and request index in the log and its operation has not ended there
(see `first.py`). A request's offset is committed only after every answer is published (a
request whose pairs wait for a measurement in flight holds it meanwhile, see `handlers.py`).
Handlers: `handlers.py`; their parts: `bootstrap.py`.
"""

from __future__ import annotations

from discospace.events.factory import Clock, utc_now
from discospace.runtime import Service, bind, create_service
from discospace.sampler.bootstrap import bootstrap
from discospace.sampler.handlers import (
    fold_requests_sent,
    on_actuator_registered,
    on_measurement_event,
    on_request_read,
    on_samples_requested,
    on_space_event,
)
from discospace.sampler.settings import SamplerSettings

DESCRIPTION = (
    "Turns SamplesRequested into entities drawn from the space without materialising it, "
    "reuses what the shared sample store already measured, and routes MeasurementRequested "
    "to the measure topic of a pool that runs the experiment."
)


def create_app(settings: SamplerSettings | None = None, *, clock: Clock = utc_now) -> Service:
    """The sampler service, ready to run."""
    settings = settings or SamplerSettings()
    service = create_service(settings, description=DESCRIPTION, clock=clock)
    topics = service.topics
    spaces = service.follow(topics.spaces, description="Registered spaces.")
    deps = bootstrap(service, settings, spaces_behind=spaces.behind)
    spaces(bind(on_space_event, deps))
    pools = service.follow(topics.actuators, description="Pools and their experiments.")
    pools(bind(on_actuator_registered, deps))
    memo = service.follow(topics.measurements, description="The sample stores' memo.")
    memo(bind(on_measurement_event, deps))
    first = service.follow(
        topics.operations,
        deduplicate=False,
        description="Every request for samples, in log order: the first of each index wins.",
    )
    first(bind(on_request_read, deps))

    @service.on_startup  # after the followers' fold: the pools and the memo are known
    async def requests_sent() -> None:
        await fold_requests_sent(deps, settings.kafka_bootstrap_servers, topics)

    requests = service.consumer(topics.operations, description="Requests for more samples.")
    requests(bind(on_samples_requested, deps))
    service.before_shutdown(deps.stop_waiting)  # their offsets stay held: answered again
    return service
