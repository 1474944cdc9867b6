"""Drawing entities lazily from a registered space, or taking explicit points."""

from __future__ import annotations

import time

from discospace.core import EntitySpace, PropertySpec, SpaceSpec, entity_id, sampling
from discospace.sampler.drawing import RegisteredSpace, SpaceBook, describe_point, draw_entities


def _space(make, spec=None) -> RegisteredSpace:
    return RegisteredSpace(make.registered(spec))


def test_a_count_request_draws_the_strategys_sequence_from_its_position(make):
    space = _space(make)
    expected = sampling(space.entity_space, "random", 7)

    drawn = draw_entities(make.request(space.event, count=3, position=2), space)

    assert list(drawn.entities) == [expected.at(k) for k in (2, 3, 4)]
    assert (drawn.next_position, drawn.exhausted, drawn.rejected) == (5, False, ())


def test_consecutive_random_requests_never_draw_an_entity_twice(make):
    space = _space(make)
    seen = []
    for position in range(0, 8, 3):
        drawn = draw_entities(make.request(space.event, count=3, position=position), space)
        seen.extend(entity.id for entity in drawn.entities)

    assert len(seen) == len(set(seen)) == 8


def test_the_last_request_of_a_finite_space_is_short_and_says_the_space_is_exhausted(make):
    space = _space(make)

    drawn = draw_entities(make.request(space.event, count=5, position=6), space)

    assert len(drawn.entities) == 2
    assert (drawn.next_position, drawn.exhausted) == (8, True)


def test_a_request_past_the_end_of_the_space_draws_nothing(make):
    space = _space(make)

    drawn = draw_entities(make.request(space.event, count=5, position=12), space)

    assert (drawn.entities, drawn.next_position, drawn.exhausted) == ((), 12, True)


def test_sequential_and_grouped_strategies_follow_their_core_sequences(make):
    space = _space(make)
    grid = draw_entities(make.request(space.event, strategy="sequential", count=8), space)
    grouped = draw_entities(
        make.request(space.event, strategy="grouped", group_by=("gpu_model",), count=4), space
    )

    assert list(grid.entities) == list(space.entity_space.sequential())
    assert len({entity["gpu_model"] for entity in grouped.entities}) == 1


def test_a_huge_space_is_drawn_from_without_being_listed(make):
    properties = tuple(PropertySpec(name=f"p{i}", values=tuple(range(100))) for i in range(7))
    spec = SpaceSpec(
        sample_store=make.store,
        entity_space=properties,
        measurement_space=make.space_spec().measurement_space,
    )
    space = _space(make, spec)
    assert space.entity_space.size == 100**7

    started = time.perf_counter()
    drawn = draw_entities(make.request(space.event, count=50, position=10**13), space)

    assert len({entity.id for entity in drawn.entities}) == 50
    assert time.perf_counter() - started < 1.0


def test_a_strategy_the_space_cannot_follow_draws_nothing_and_says_why(make):
    spec = SpaceSpec(
        sample_store=make.store,
        entity_space=(PropertySpec(name="power", type="continuous", range=(100, 400)),),
        measurement_space=make.space_spec().measurement_space,
    )
    space = _space(make, spec)

    drawn = draw_entities(make.request(space.event, strategy="sequential", count=2), space)

    assert (drawn.entities, drawn.exhausted) == ((), True)
    assert drawn.rejected == (
        "cannot draw by sequential: sequential sampling needs a finite entity space, "
        "but property 'power' is continuous",
    )


def test_a_continuous_space_never_runs_out(make):
    spec = SpaceSpec(
        sample_store=make.store,
        entity_space=(PropertySpec(name="power", type="continuous", range=(100, 400)),),
        measurement_space=make.space_spec().measurement_space,
    )
    space = _space(make, spec)

    drawn = draw_entities(make.request(space.event, count=4, position=1000), space)

    assert (len(drawn.entities), drawn.next_position, drawn.exhausted) == (4, 1004, False)


def test_explicit_points_are_normalised_to_their_canonical_entity(make):
    space = _space(make)
    points = ({"batch_size": 4.0, "gpu_model": "A100"}, {"gpu_model": "H100", "batch_size": 8})

    drawn = draw_entities(make.request(space.event, points=points, position=3), space)

    assert [entity.id for entity in drawn.entities] == [
        entity_id({"batch_size": 4, "gpu_model": "A100"}),
        entity_id({"batch_size": 8, "gpu_model": "H100"}),
    ]
    assert (drawn.next_position, drawn.exhausted, drawn.rejected) == (3, False, ())


def test_a_point_outside_the_space_is_refused_with_the_reason_and_the_others_drawn(make):
    space = _space(make)
    points = ({"batch_size": 3, "gpu_model": "A100"}, {"batch_size": 2, "gpu_model": "A100"})

    drawn = draw_entities(make.request(space.event, points=points), space)

    assert [entity["batch_size"] for entity in drawn.entities] == [2]
    assert drawn.rejected == (
        "batch_size=3, gpu_model=A100: property 'batch_size' has the value 3, "
        "which is not in its domain [1, 2, 4, 8]",
    )


def test_a_point_given_twice_is_drawn_once_with_the_inputs_of_its_first_mention(make):
    space = _space(make)
    point = {"batch_size": 2, "gpu_model": "A100"}
    inputs = ({"bench.throughput": 1.5}, {"bench.throughput": 9.5})

    drawn = draw_entities(make.request(space.event, points=(point, point), inputs=inputs), space)

    assert len(drawn.entities) == 1
    assert drawn.inputs == ({"bench.throughput": 1.5},)


def test_a_point_is_described_with_its_names_sorted():
    assert describe_point({"z": True, "a": 4.0, "m": "x"}) == "a=4, m=x, z=true"


def test_the_first_registration_of_a_space_is_kept(make):
    book = SpaceBook()
    first = make.registered()
    again = first.model_copy(update={"event_id": "another"})

    book.record(first)
    book.record(again)

    assert len(book) == 1
    assert first.space_id in book
    registered = book.get(first.space_id)
    assert registered is not None
    assert registered.event is first
    assert isinstance(registered.entity_space, EntitySpace)


def test_a_space_keeps_only_the_sequences_drawn_from_most_recently(make, monkeypatch):
    from discospace.sampler import drawing

    monkeypatch.setattr(drawing, "SEQUENCES_KEPT", 2)
    space = _space(make)
    first = space.sequence(make.request(space.event, seed=1))
    second = space.sequence(make.request(space.event, seed=2))
    assert space.sequence(make.request(space.event, seed=1)) is first
    space.sequence(make.request(space.event, seed=3))

    assert space.sequence(make.request(space.event, seed=1)) is first
    assert space.sequence(make.request(space.event, seed=2)) is not second
