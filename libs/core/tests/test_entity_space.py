import itertools
import math

import pytest

from discospace.core import (
    EntityError,
    EntitySpace,
    EntitySpaceError,
    PropertySpec,
    load_discovery_space,
)


def space() -> EntitySpace:
    return EntitySpace.from_specs(
        [
            PropertySpec(name="model", values=["a", "b", "c"]),
            PropertySpec(name="gpus", values=[1, 2]),
            PropertySpec(name="batch_size", range=[8, 40], interval=8),
        ]
    )


def test_the_size_of_an_entity_space_is_the_product_of_its_domain_sizes() -> None:
    assert space().size == 3 * 2 * 4


def test_a_space_with_a_continuous_property_has_infinite_size() -> None:
    mixed = EntitySpace.from_specs(
        [PropertySpec(name="a", values=[1]), PropertySpec(name="lr", range=[0.0, 1.0])]
    )
    assert mixed.size == math.inf
    assert not mixed.is_finite


def test_the_seed_space_has_eighty_entities(seed_space_file) -> None:
    assert load_discovery_space(seed_space_file).entity_space.size == 80


def test_a_point_inside_the_space_belongs_to_it() -> None:
    assert {"model": "b", "gpus": 2, "batch_size": 16} in space()


@pytest.mark.parametrize(
    ("point", "reason"),
    [
        ({"model": "z", "gpus": 2, "batch_size": 16}, "property 'model' has the value z"),
        ({"model": "a", "gpus": 2, "batch_size": 40}, "property 'batch_size' has the value 40"),
        ({"model": "a", "gpus": 2}, "property 'batch_size' is missing"),
        ({"model": "a", "gpus": 2, "batch_size": 8, "x": 1}, "property 'x' is not in the entity"),
    ],
)
def test_a_point_outside_the_space_comes_with_the_reason(point: dict, reason: str) -> None:
    assert reason in (space().why_not(point) or "")
    assert point not in space()
    with pytest.raises(EntityError, match=reason):
        space().normalise(point)


def test_normalising_a_point_converts_values_to_their_domain() -> None:
    entity = space().normalise({"model": "a", "gpus": "2", "batch_size": 16.0})
    assert entity.as_dict() == {"model": "a", "gpus": 2, "batch_size": 16}
    assert isinstance(entity["batch_size"], int)


def test_sequential_iteration_walks_the_grid_with_the_last_property_fastest() -> None:
    points = [e.as_dict() for e in space()]
    expected = [
        {"model": m, "gpus": g, "batch_size": b}
        for m, g, b in itertools.product(["a", "b", "c"], [1, 2], [8, 16, 24, 32])
    ]
    assert points == expected


def test_index_and_entity_are_inverse() -> None:
    grid = space()
    for index in range(grid.size):
        assert grid.index_of(grid.entity_at(index)) == index


def test_an_index_outside_the_space_is_refused() -> None:
    with pytest.raises(EntitySpaceError, match="outside a space of 24"):
        space().entity_at(24)


def test_a_property_cannot_appear_twice() -> None:
    with pytest.raises(EntitySpaceError, match="'a' appears twice"):
        EntitySpace.from_specs(
            [PropertySpec(name="a", values=[1]), PropertySpec(name="a", values=[2])]
        )


def test_an_entity_space_needs_a_property() -> None:
    with pytest.raises(EntitySpaceError, match="at least one property"):
        EntitySpace([])


def test_a_space_with_narrower_domains_is_a_subspace() -> None:
    narrow = EntitySpace.from_specs(
        [
            PropertySpec(name="gpus", values=[2]),
            PropertySpec(name="model", values=["a", "c"]),
            PropertySpec(name="batch_size", values=[8, 32]),
        ]
    )
    assert narrow.is_subspace_of(space())
    assert not space().is_subspace_of(narrow)


def test_a_space_with_other_properties_is_not_a_subspace() -> None:
    other = EntitySpace.from_specs([PropertySpec(name="model", values=["a"])])
    assert not other.is_subspace_of(space())
