"""A restarted explorer rebuilds every operation from the log: no decision repeated or lost."""

from __future__ import annotations

import pytest

from discospace.events import (
    MeasurementCompleted,
    OperationCompleted,
    OperationStarted,
    SamplesRequested,
)

ORDERS = ["as_logged", "measurements_first", "operations_first"]


def _content(event):
    return event.model_dump(exclude={"occurred_at"})


def _half_way(loop, space, make_request, **parameters):
    sim = loop(space)
    sim.send(make_request(space, batch_size=4, seed=8, **parameters))
    for _ in range(10):
        sim.answer_draws()
        sim.measure_next()
    return sim


@pytest.mark.parametrize("order", ORDERS)
def test_replaying_a_history_that_holds_its_decisions_decides_nothing_new(
    loop, eighty_space, make_request, order
):
    sim = _half_way(loop, eighty_space, make_request)
    sim.crash()
    assert sim.restart(order) == []


@pytest.mark.parametrize("order", ORDERS)
def test_decisions_lost_before_publishing_are_decided_again_with_the_same_ids(
    loop, eighty_space, make_request, order
):
    sim = _half_way(loop, eighty_space, make_request)
    sim.answer_draws()
    made = sim.measure_next()
    assert made
    sim.crash(unpublished=len(made))
    again = sim.restart(order)
    assert [_content(e) for e in again] == [_content(e) for e in made]


def test_an_operation_requested_while_the_explorer_was_down_starts_once_it_is_live(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.crash()
    sim.log.append(make_request(small_space, batch_size=2))
    decisions = sim.restart()
    assert [type(d) for d in decisions] == [OperationStarted, SamplesRequested]


def test_results_that_arrived_while_the_explorer_was_down_refill_the_window_on_restart(
    loop, eighty_space, make_request
):
    sim = _half_way(loop, eighty_space, make_request)
    sim.answer_draws()
    sim.crash()
    for _ in range(3):
        pending = sim.measuring.pop(0)
        sim.log.append(sim.result_of(pending, "valid", {"tps": 1.0, "mem": 1}))
    refill = sim.restart()
    assert sum(r.count or 0 for r in refill if isinstance(r, SamplesRequested)) == 3


@pytest.mark.parametrize("order", ORDERS)
def test_an_explorer_killed_mid_operation_finishes_it_with_one_measurement_per_entity(
    loop, eighty_space, make_request, flaky_behaviour, order
):
    sim = loop(eighty_space, behaviour=flaky_behaviour(0.2, seed=6))
    sim.send(make_request(eighty_space, number_entities="all", batch_size=4, max_retries=3))
    for _ in range(40):
        sim.step()
    made = sim.step()
    while not made:
        made = sim.step()
    sim.crash(unpublished=len(made))
    sim.restart(order)
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.measured + completed.counts.failed == 80
    measured = [e.entity_id for e in sim.log if isinstance(e, MeasurementCompleted)]
    assert len(measured) == len(set(measured))
    requests = sim.decisions(SamplesRequested)
    assert len({r.event_id for r in requests}) == len(requests)
    assert sorted(r.request_index for r in requests) == list(range(len(requests)))


def test_an_event_delivered_twice_is_folded_once(loop, small_space, make_request):
    sim = loop(small_space)
    sim.send(make_request(small_space, batch_size=2, seed=1))
    sim.answer_draws()
    result = sim.result_of(sim.measuring.pop(0), "valid", {"tps": 1.0, "mem": 1})
    first = sim.send(result)
    assert first
    assert sim.send(result) == []
    assert sim.send(first[0]) == []


def test_a_result_folded_before_the_draw_that_caused_it_is_not_lost(
    loop, small_space, make_request
):
    sim = loop(small_space)
    sim.send(make_request(small_space, number_entities=2, batch_size=2, seed=1))
    [draw] = sim.draws
    sim.draws.clear()
    sim.answer(draw)
    drawn = sim.log.pop()  # the SamplesDrawn: the last event `answer` logged
    results = [sim.result_of(p, "valid", {"tps": 1.0, "mem": 1}) for p in sim.measuring]
    sim.measuring.clear()
    sim.crash()
    sim.log.extend(results)
    assert sim.restart() == []
    [completed] = sim.send(drawn)
    assert isinstance(completed, OperationCompleted)
    assert completed.counts.measured == 2


def test_the_same_seed_gives_the_same_decisions_and_another_seed_other_entities(
    loop, eighty_space, make_request
):
    def run(seed):
        sim = loop(eighty_space)
        sim.send(make_request(eighty_space, number_entities=12, batch_size=3, seed=seed))
        sim.run()
        measured = [e.entity_id for e in sim.log if isinstance(e, MeasurementCompleted)]
        return [_content(d) for d in sim.decisions()], measured

    first, again, other = run(21), run(21), run(22)
    assert first == again
    assert set(other[1]) != set(first[1])


def test_a_plateau_ends_the_operation_whether_its_results_were_read_one_by_one_or_together(
    loop, small_space, make_request
):
    """An improvement that landed after the plateau reset the counter when a restarted explorer
    read every result at once: it went on drawing where the live explorer had stopped."""

    def results(*tps):
        values = iter(tps)
        return lambda entity, experiment, attempt: ("valid", {"tps": next(values), "mem": 1})

    def walk():
        return make_request(
            small_space,
            batch_size=4,
            seed=1,
            sampler="sequential",
            number_entities=8,
            objective={"property": "tps", "direction": "max"},
            stopping={"no_improvement": 2},
        )

    live = loop(small_space, results(10.0, 5.0, 5.0, 20.0))
    live.send(walk())
    live.answer_draws()
    ends = []
    while not ends:
        ends = [e for e in live.measure_next() if isinstance(e, OperationCompleted)]

    restarted = loop(small_space, results(10.0, 5.0, 5.0, 20.0))
    restarted.send(walk())
    restarted.answer_draws()
    restarted.crash()
    for _ in range(4):
        restarted.log.append(restarted.fakes.measure(restarted.measuring.pop(0), restarted.now))
    decided = restarted.restart()

    assert [(end.stop_reason, end.counts.measured) for end in ends] == [("no_improvement", 3)]
    assert [type(e) for e in decided] == [OperationCompleted]
    assert decided[0].stop_reason == "no_improvement"
    for end in (ends[0], decided[0]):
        assert end.stop_detail.startswith("2 measurements in a row did not improve tps;")
