"""What the sampler's /metrics shows a dashboard: each pool it knows, from zero."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from discospace.events import Event
from discospace.sampler.domain import SamplerState
from discospace.sampler.handlers import SamplerDeps, on_actuator_registered
from discospace.sampler.metrics import SamplerMetrics


async def _nowhere(event: Event) -> None:
    """Publishes nothing: announcing a pool answers nothing."""


async def test_a_pool_is_listed_at_zero_as_soon_as_its_first_worker_announces_itself(clock, make):
    registry = CollectorRegistry()
    state = SamplerState()
    deps = SamplerDeps(
        state=state,
        metrics=SamplerMetrics.create(registry, lambda: len(state.memo)),
        publish=_nowhere,
        clock=clock,
        space_wait_s=0.0,
        first_request_wait_s=0.0,
    )

    await on_actuator_registered(make.pool("a100", "A100"), deps)

    requested = registry.get_sample_value(
        "discospace_measurements_requested_total", {"pool": "a100"}
    )
    assert requested == 0
    assert registry.get_sample_value("discospace_memo_hits_total") == 0
