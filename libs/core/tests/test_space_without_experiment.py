"""A discovery space must name at least one experiment: one rule, used by the registry and the
explorer (issue 13, item 4); a space without one can still be described."""

from __future__ import annotations

import pytest

from discospace.core import (
    DiscoverySpace,
    ExperimentCatalog,
    MeasurementSpaceError,
    PropertySpec,
    SpaceSpec,
)
from discospace.core.discovery import NO_EXPERIMENT

EMPTY = SpaceSpec(
    sample_store="s",
    entity_space=(PropertySpec(name="batch_size", values=(1, 2)),),
    measurement_space=(),
)


def test_a_space_without_experiment_has_one_problem_saying_so() -> None:
    space = DiscoverySpace.from_spec(EMPTY)
    assert space.problems(ExperimentCatalog()) == [NO_EXPERIMENT]
    assert space.shape_problems() == [NO_EXPERIMENT]


def test_a_space_without_experiment_has_no_measurement_space() -> None:
    with pytest.raises(MeasurementSpaceError, match="has no experiment"):
        DiscoverySpace.from_spec(EMPTY).measurement_space(ExperimentCatalog())
