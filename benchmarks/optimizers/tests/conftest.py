"""A small space for in-process operations: batch size x number of GPUs, one experiment."""

from __future__ import annotations

from pathlib import Path

import pytest

from discospace.bench.harness import space_event
from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.events import SpaceRegistered

BENCH = ExperimentSpec(
    actuator="Bench",
    experiment="bench",
    target_properties=("tps", "mem"),
    required_properties=("batch_size", "number_gpus"),
)
SMALL = (
    PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
    PropertySpec(name="number_gpus", values=(1, 2)),
)


@pytest.fixture
def small_space() -> SpaceRegistered:
    reference = ExperimentRef(actuator=BENCH.actuator, experiment=BENCH.experiment)
    spec = SpaceSpec(sample_store="store-a", entity_space=SMALL, measurement_space=(reference,))
    return space_event(spec, (BENCH,))


@pytest.fixture(scope="module")
def zeus_folder() -> Path:
    """The folder of the published Zeus traces; the test skips, saying where it looked, when
    they are not here."""
    from discospace.traces.data import TraceDataMissingError, zeus_data_dir

    try:
        return zeus_data_dir()
    except TraceDataMissingError as error:
        pytest.skip(f"the Zeus traces are not here: {error}")
