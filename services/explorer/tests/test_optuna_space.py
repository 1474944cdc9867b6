"""How an entity space becomes Optuna distributions, and suggestions become entities again."""

from __future__ import annotations

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from discospace.core import Entity, EntitySpace, PropertySpec
from discospace.explorer.operators.optuna_search import SearchSpace, SearchSpaceError
from discospace.explorer.operators.optuna_search.candidates import (
    ListedPool,
    OpenPool,
    SequencePool,
    pool_of,
)


def space(*specs: PropertySpec) -> EntitySpace:
    return EntitySpace.from_specs(specs)


MIXED = space(
    PropertySpec(name="model", values=("small", "large")),
    PropertySpec(name="number_gpus", values=(1, 2, 3, 4)),
    PropertySpec(name="batch_size", values=(2, 4, 8)),
    PropertySpec(name="learning_rate", range=(0.0001, 0.1)),
    PropertySpec(name="warmup", range=(0, 10), interval=2),
)


def test_each_domain_maps_to_the_distribution_that_keeps_its_meaning():
    distributions = SearchSpace.of(MIXED).distributions

    assert distributions["model"] == CategoricalDistribution(("small", "large"))
    assert distributions["number_gpus"] == IntDistribution(1, 4, step=1)
    assert distributions["batch_size"] == CategoricalDistribution((2, 4, 8))
    assert distributions["learning_rate"] == FloatDistribution(0.0001, 0.1)
    assert distributions["warmup"] == IntDistribution(0, 8, step=2)


def test_numbers_declared_categorical_are_searched_without_an_order():
    """`type: categorical` says their order means nothing (codes, say): [1, 2, 3] became an
    IntDistribution, searched as ordered, and a numbers-only sampler took them as ranks."""
    codes = space(PropertySpec(name="variant", type="categorical", values=(1, 2, 3)))
    search = SearchSpace.of(codes)

    assert search.distributions["variant"] == CategoricalDistribution((1, 2, 3))
    assert search.dimensions[0].is_category
    with pytest.raises(SearchSpaceError, match="'variant' is categorical"):
        SearchSpace.of(codes, numeric_only=True)


def test_evenly_spaced_decimal_values_become_a_float_range_with_their_step():
    search = SearchSpace.of(space(PropertySpec(name="ratio", values=(0.1, 0.2, 0.3))))

    assert search.distributions["ratio"] == FloatDistribution(0.1, 0.3, step=0.1)
    assert search.entity({"ratio": 0.30000000000000004})["ratio"] == 0.3


@pytest.mark.parametrize(("low", "step"), [(2**53, 1), (10**17, 1), (2**60 + 1, 1001)])
def test_evenly_spaced_whole_numbers_beyond_floats_are_no_int_distribution(low: int, step: int):
    """Optuna computes an int distribution in floats, where 10^17 + 1 is 10^17: the search
    failed with a bare ValueError (TPE: NaN to integer; GP: argmax of an empty sequence; a
    value not contained in the distribution) once the model took over. Such values are
    searched as categories, or by rank."""
    values = (low, low + step, low + 2 * step)
    ids = space(PropertySpec(name="seed", values=values))

    assert SearchSpace.of(ids).distributions["seed"] == CategoricalDistribution(values)
    assert SearchSpace.of(ids, numeric_only=True).distributions["seed"] == IntDistribution(0, 2)
    near = space(PropertySpec(name="seed", values=(2**52, 2**52 + 4, 2**52 + 8)))
    assert SearchSpace.of(near).distributions["seed"] == IntDistribution(2**52, 2**52 + 8, step=4)


def test_a_range_of_whole_numbers_beyond_floats_is_searched_by_index():
    ranged = space(PropertySpec(name="seed", range=(2**60 + 1, 2**60 + 40_041), interval=1001))
    search = SearchSpace.of(ranged)
    [dimension] = search.dimensions

    assert search.distributions["seed"] == IntDistribution(0, 39)
    assert search.entity({"seed": 7})["seed"] == 2**60 + 1 + 7 * 1001
    assert dimension.param(2**60 + 1 + 7 * 1001) == 7


@pytest.mark.parametrize(
    "written",
    [
        PropertySpec(name="x", range=(1_000_000.0, 1_000_001.0), interval=0.001),
        PropertySpec(name="x", values=tuple(1_000_000 + k / 1000 for k in range(40))),
        PropertySpec(name="x", range=(0.1, 1.0), interval=1 / 30),  # Optuna lowers its high
    ],
    ids=["range", "listed", "high-lowered"],
)
def test_a_float_grid_optuna_cannot_hold_is_searched_by_index(written: PropertySpec):
    """Optuna's FloatDistribution refused the point 1000000.936 of [1e6, 1e6 + 1] by 0.001
    (float error over 1e-8 steps), and the last point of [0.1, 1.0) by 1/30 (the decimals of
    its bounds do not divide by the step: it lowers its high): told back after the start-up,
    it failed every search."""
    grid = space(written)
    search = SearchSpace.of(grid)
    [dimension] = search.dimensions
    distribution = search.distributions["x"]

    assert isinstance(distribution, IntDistribution)
    for entity in list(grid.sequential())[::3]:
        param = dimension.param(entity["x"])
        assert distribution._contains(distribution.to_internal_repr(param))
        assert search.entity({"x": param}) == entity


def test_a_continuous_range_of_whole_bounds_no_float_holds_is_searched_inside_them():
    """2^53 + 1 became the float 2^53, below the domain: the search failed on its first
    suggestion there."""
    bounds = space(PropertySpec(name="x", range=(2**53 + 1, 2**53 + 9), type="continuous"))
    distribution = SearchSpace.of(bounds).distributions["x"]

    assert isinstance(distribution, FloatDistribution)
    assert 2**53 + 1 <= distribution.low <= distribution.high <= 2**53 + 9
    narrow = space(PropertySpec(name="x", range=(2**54 + 1, 2**54 + 2), type="continuous"))
    with pytest.raises(SearchSpaceError, match="holds no float between its bounds"):
        SearchSpace.of(narrow)


def test_a_numbers_only_sampler_gets_uneven_values_as_their_rank_and_refuses_categories():
    numeric = space(PropertySpec(name="batch_size", values=(8, 2, 4)))
    search = SearchSpace.of(numeric, numeric_only=True)

    assert search.distributions["batch_size"] == IntDistribution(0, 2)
    assert search.params({"batch_size": 8}) == {"batch_size": 2}
    assert search.entity({"batch_size": 0})["batch_size"] == 2
    with pytest.raises(SearchSpaceError, match="'model' is categorical"):
        SearchSpace.of(MIXED, numeric_only=True)


def test_an_identifier_property_cannot_be_searched():
    with pytest.raises(SearchSpaceError, match="'run' is an identifier"):
        SearchSpace.of(space(PropertySpec(name="run", type="identifier")))


def test_parameters_of_an_entity_give_back_the_same_entity():
    search = SearchSpace.of(MIXED)
    point = {
        "model": "large",
        "number_gpus": 3,
        "batch_size": 8,
        "learning_rate": 0.01,
        "warmup": 4,
    }

    assert search.entity(search.params(point)) == Entity.of(point)


def test_a_taken_suggestion_maps_to_the_nearest_free_point_and_ties_go_to_the_earlier():
    grid = space(
        PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
        PropertySpec(name="model", values=("small", "large")),
    )
    pool = pool_of(SearchSpace.of(grid), seed=0)
    taken = {Entity.of({"batch_size": 4, "model": "small"}).id}

    nearest = pool.nearest_free(Entity.of({"batch_size": 4, "model": "small"}), taken)

    assert isinstance(pool, ListedPool)
    assert nearest == Entity.of({"batch_size": 2, "model": "small"})


def test_the_pool_of_a_space_depends_on_whether_it_can_be_listed():
    huge = space(*(PropertySpec(name=f"p{i}", range=(0, 100), interval=1) for i in range(3)))
    open_space = space(PropertySpec(name="rate", range=(0.0, 1.0)))

    assert isinstance(pool_of(SearchSpace.of(huge), seed=1), SequencePool)
    assert isinstance(pool_of(SearchSpace.of(open_space), seed=1), OpenPool)


def test_a_large_space_gives_the_first_free_point_of_its_seeded_random_order():
    huge = space(*(PropertySpec(name=f"p{i}", range=(0, 100), interval=1) for i in range(3)))
    pool = pool_of(SearchSpace.of(huge), seed=3)
    first = pool.nearest_free(Entity.of({"p0": 0, "p1": 0, "p2": 0}), set())
    assert first is not None

    second = pool.nearest_free(Entity.of({"p0": 0, "p1": 0, "p2": 0}), {first.id})

    assert second is not None
    assert second != first


def test_a_float_grid_optuna_holds_keeps_its_values_as_a_stepped_float():
    """Only a grid Optuna refuses is searched by index: a first check, an ulp against a tenth
    of Optuna's tolerance, sent 288 of 2575 decimal grids it holds (8000 by 9.2e-05) there,
    and GP's suggestions changed."""
    grid = space(PropertySpec(name="x", range=(8000.0, 8000.092), interval=9.2e-05))

    assert isinstance(SearchSpace.of(grid).distributions["x"], FloatDistribution)
