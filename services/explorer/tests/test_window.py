"""Random walks keep `batch_size` entities in flight and stop at their budget or the space's end."""

from __future__ import annotations

from discospace.core import EntitySpace, sampling
from discospace.events import OperationCompleted, OperationStarted, SamplesRequested


def _requests(decisions):
    return [d for d in decisions if isinstance(d, SamplesRequested)]


def test_the_first_request_fills_the_window_from_the_start_of_the_sequence(
    loop, small_space, make_request
):
    decisions = loop(small_space).send(make_request(small_space, batch_size=3, seed=11))
    started, first = decisions
    assert isinstance(started, OperationStarted)
    assert isinstance(first, SamplesRequested)
    assert (first.request_index, first.count, first.position) == (0, 3, 0)
    assert (first.strategy, first.seed, first.attempt) == ("random", 11, 1)
    assert [ref.experiment for ref in first.experiments] == ["bench"]
    assert first.single_measurement is True
    assert first.causation_id == started.event_id


def test_each_result_frees_a_slot_that_one_new_request_fills_at_the_next_position(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=3, seed=11))
    sim.answer_draws()
    assert len(sim.measuring) == 3
    refill = _requests(sim.measure_next())
    assert [(r.request_index, r.count, r.position) for r in refill] == [(1, 1, 3)]


def test_nothing_is_requested_while_the_window_is_full(loop, small_space, make_request):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=3))
    assert sim.answer_draws() == []


def test_the_window_never_holds_more_than_batch_size_entities(loop, eighty_space, make_request):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, batch_size=5, seed=2))
    sim.run()
    assert sim.most_in_flight == 5


def test_a_random_walk_over_all_of_an_80_entity_space_measures_each_entity_once(
    loop, eighty_space, make_request
):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, number_entities="all", batch_size=4, seed=5))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "space_exhausted"
    assert completed.counts.model_dump() == {
        "requested": 80,
        "measured": 80,
        "reused": 0,
        "failed": 0,
        "invalid": 0,
    }
    measured = [e.entity_id for e in sim.log if type(e).__name__ == "MeasurementCompleted"]
    assert len(set(measured)) == len(measured) == 80


def test_a_walk_of_n_entities_draws_the_first_n_of_the_seeded_sequence_and_stops(
    loop, eighty_space, make_request
):
    sim = loop(eighty_space)
    sim.send(make_request(eighty_space, number_entities=10, batch_size=3, seed=9))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "requested_entities_measured"
    assert completed.counts.measured == 10
    space = EntitySpace.from_specs(eighty_space.spec.entity_space)
    expected = {sampling(space, "random", 9).at(k).id for k in range(10)}
    measured = {e.entity_id for e in sim.log if type(e).__name__ == "MeasurementCompleted"}
    assert measured == expected
    assert sum(r.count or 0 for r in sim.decisions(SamplesRequested)) == 10


def test_a_walk_asking_for_more_entities_than_the_space_holds_ends_with_the_space(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.send(make_request(small_space, number_entities=50, batch_size=3))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "space_exhausted"
    assert completed.counts.measured == 8


def test_a_sampler_reporting_the_space_exhausted_early_ends_the_walk_as_exhausted(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.send(make_request(small_space, number_entities=8, batch_size=8))
    [first] = sim.draws
    sim.draws.clear()
    short = first.model_copy(update={"count": 5})
    sim.answer(short.model_copy(update={"position": 3}))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "space_exhausted"
    assert completed.stop_detail.startswith("the space ran out after 5 entities were drawn")


def test_the_sequential_and_grouped_samplers_are_asked_for_with_their_settings(
    loop, eighty_space, make_request
):
    sequential = loop(eighty_space).send(make_request(eighty_space, sampler="sequential"))[1]
    grouped = loop(eighty_space).send(
        make_request(eighty_space, sampler="grouped", group_by=("model",), seed=4)
    )[1]
    assert isinstance(sequential, SamplesRequested)
    assert isinstance(grouped, SamplesRequested)
    assert sequential.strategy == "sequential"
    assert (grouped.strategy, grouped.group_by, grouped.seed) == ("grouped", ("model",), 4)


def test_a_grouped_walk_measures_whole_groups_in_turn(loop, eighty_space, make_request):
    sim = loop(eighty_space)
    sim.send(
        make_request(
            eighty_space, sampler="grouped", group_by=("model",), number_entities=40, seed=3
        )
    )
    sim.run()
    models = {
        e.entity_values["model"] for e in sim.log if type(e).__name__ == "MeasurementCompleted"
    }
    assert len(models) == 1


def test_switching_off_single_measurement_is_passed_to_the_sampler(loop, small_space, make_request):
    first = loop(small_space).send(make_request(small_space, single_measurement=False))[1]
    assert isinstance(first, SamplesRequested)
    assert first.single_measurement is False
