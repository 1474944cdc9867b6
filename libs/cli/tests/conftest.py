"""Fixtures shared by the CLI's tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.core.discovery import DiscoverySpace
from discospace.events import SpaceRegistered, new_event

BENCHMARK = ExperimentSpec(
    actuator="synthetic",
    experiment="benchmark",
    target_properties=("throughput", "peak_memory"),
    required_properties=("batch_size", "model_name"),
)
WARMUP = ExperimentSpec(
    actuator="synthetic",
    experiment="warmup",
    target_properties=("seconds",),
    required_properties=("batch_size",),
    optional_properties={"steps": 10},
)


def registration(
    store: str = "store-a",
    *refs: ExperimentRef,
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8),
) -> SpaceRegistered:
    """The registry's registration of a space of batch sizes and two models on `store`,
    measured by `refs` (by default the `benchmark` experiment)."""
    spec = SpaceSpec(
        sample_store=store,
        entity_space=(
            PropertySpec(name="batch_size", values=batch_sizes),
            PropertySpec(name="model_name", values=("llama-7b", "granite-8b")),
        ),
        measurement_space=refs or (ExperimentRef(actuator="synthetic", experiment="benchmark"),),
    )
    return new_event(
        SpaceRegistered,
        submission_id="sub-1",
        space_id=DiscoverySpace.from_spec(spec).id,
        spec=spec,
        experiments=(BENCHMARK, WARMUP),
    )


@pytest.fixture
def registered() -> Callable[..., SpaceRegistered]:
    """Factory of space registrations (see `registration`)."""
    return registration
