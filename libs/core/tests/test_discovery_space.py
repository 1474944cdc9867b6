import re

import pytest

from discospace.core import (
    DiscoverySpace,
    ExperimentCatalog,
    ExperimentSpec,
    MeasurementSpaceError,
    SpaceRelation,
    SpaceSpec,
    load_space_spec,
)


def spec(
    properties: list[dict], experiments: list[dict] | None = None, store: str = "s1"
) -> SpaceSpec:
    return SpaceSpec.model_validate(
        {
            "sample_store": store,
            "entity_space": properties,
            "measurement_space": experiments or [{"actuator": "A", "experiment": "e"}],
        }
    )


BASE: list[dict] = [{"name": "gpus", "values": [1, 2, 4]}, {"name": "model", "values": ["a", "b"]}]


def space(properties: list[dict] = BASE, **kwargs) -> DiscoverySpace:
    return DiscoverySpace.from_spec(spec(properties, **kwargs))


def test_the_same_space_twice_gives_the_same_id() -> None:
    assert space().id == space().id
    assert re.fullmatch(r"space-[0-9a-f]{12}", space().id)


def test_reordering_properties_values_or_experiments_does_not_change_the_id() -> None:
    reordered: list[dict] = [
        {"name": "model", "values": ["b", "a"]},
        {"name": "gpus", "values": [4, 1, 2.0]},
    ]
    two = [{"actuator": "A", "experiment": "e"}, {"actuator": "B", "experiment": "f"}]
    assert space(reordered).id == space().id
    assert space(experiments=two).id == space(experiments=two[::-1]).id


def test_a_different_store_domain_or_parameterization_changes_the_id() -> None:
    assert space(store="s2").id != space().id
    assert space([{"name": "gpus", "values": [1, 2]}, BASE[1]]).id != space().id
    parameterized = [{"actuator": "A", "experiment": "e", "parameterization": {"r": 8}}]
    assert space(experiments=parameterized).id != space().id


def test_the_seed_space_id_is_stable(seed_space_file) -> None:
    loaded = DiscoverySpace.from_spec(load_space_spec(seed_space_file))
    assert loaded.id == DiscoverySpace.from_spec(loaded.to_spec()).id


@pytest.mark.parametrize(
    ("other", "relation"),
    [
        (space(), SpaceRelation.EQUAL),
        (space([{"name": "gpus", "values": [1]}, BASE[1]]), SpaceRelation.SUBSPACE),
        (
            space([{"name": "gpus", "type": "continuous", "range": [0, 10]}, BASE[1]]),
            SpaceRelation.SUPERSPACE,
        ),
        (
            space(
                experiments=[
                    {"actuator": "A", "experiment": "e"},
                    {"actuator": "B", "experiment": "f"},
                ]
            ),
            SpaceRelation.SUPERSPACE,
        ),
        (space(store="other"), SpaceRelation.UNRELATED),
        (space([BASE[0]]), SpaceRelation.UNRELATED),
        (
            space(
                [{"name": "gpus", "values": [1]}, BASE[1]],
                experiments=[{"actuator": "B", "experiment": "f"}],
            ),
            SpaceRelation.UNRELATED,
        ),
    ],
)
def test_two_spaces_compare_as_equal_sub_super_or_unrelated(
    other: DiscoverySpace, relation: SpaceRelation
) -> None:
    assert other.compare(space()) is relation


def test_a_space_lists_every_problem_against_a_catalog() -> None:
    catalog = ExperimentCatalog(
        [
            ExperimentSpec(
                actuator="A",
                experiment="e",
                target_properties=["t"],
                required_properties=["gpus", "lr"],
            )
        ]
    )
    two = [{"actuator": "A", "experiment": "e"}, {"actuator": "B", "experiment": "f"}]
    problems = space(experiments=two).problems(catalog)
    assert problems == [
        "experiment 'f' of actuator 'B' is not in the catalog",
        "experiment 'e' requires property 'lr', which the entity space lacks",
    ]
    with pytest.raises(MeasurementSpaceError, match="'lr'"):
        space(experiments=two).measurement_space(catalog)


def test_two_references_to_one_experiment_are_a_problem_listed_not_raised() -> None:
    """`e` and `e` with its default lr resolve to one experiment id."""
    catalog = ExperimentCatalog(
        [
            ExperimentSpec(
                actuator="A",
                experiment="e",
                target_properties=["t"],
                required_properties=["gpus"],
                optional_properties={"lr": 0.001},
            )
        ]
    )
    twice = [
        {"actuator": "A", "experiment": "e"},
        {"actuator": "A", "experiment": "e", "parameterization": {"lr": 0.001}},
    ]

    assert space(experiments=twice).problems(catalog) == [
        "experiment 'e' appears twice in the measurement space"
    ]


def test_a_measurement_space_resolves_when_nothing_is_missing() -> None:
    catalog = ExperimentCatalog(
        [
            ExperimentSpec(
                actuator="A", experiment="e", target_properties=["t"], required_properties=["gpus"]
            )
        ]
    )
    assert space().measurement_space(catalog).observed_property_ids == ("e.t",)


def test_an_experiment_listed_twice_is_refused() -> None:
    twice = [{"actuator": "A", "experiment": "e"}, {"actuator": "A", "experiment": "e"}]
    with pytest.raises(MeasurementSpaceError, match="'e' of actuator 'A' appears twice"):
        space(experiments=twice)
