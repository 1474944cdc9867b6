"""Dependent experiments run after the experiment they depend on, for the same entity."""

from __future__ import annotations

from discospace.events import MeasurementCompleted, OperationCompleted, SamplesRequested


def _walk(loop, space, make_request, behaviour=None, **parameters):
    sim = loop(space, behaviour=behaviour) if behaviour else loop(space)
    sim.send(make_request(space, number_entities=1, batch_size=1, seed=1, **parameters))
    sim.answer_draws()
    return sim


def test_only_independent_experiments_are_requested_with_a_draw(
    loop, dependent_space, make_request
):
    sim = _walk(loop, dependent_space, make_request)
    [draw] = sim.decisions(SamplesRequested)
    assert [ref.experiment for ref in draw.experiments] == ["bench"]


def test_a_dependent_experiment_is_requested_for_the_entity_once_its_dependency_is_valid(
    loop, dependent_space, make_request
):
    sim = _walk(loop, dependent_space, make_request)
    entity = sim.measuring[0].entity
    [follow_up] = sim.measure_next()
    assert isinstance(follow_up, SamplesRequested)
    assert follow_up.points == (entity,)
    assert [ref.experiment for ref in follow_up.experiments] == ["energy"]
    assert follow_up.attempt == 1
    tps = float(entity["batch_size"] * entity["number_gpus"])
    assert follow_up.inputs == ({"bench.tps": tps},)


def test_the_operation_completes_once_the_dependent_experiment_is_measured_too(
    loop, dependent_space, make_request
):
    sim = _walk(loop, dependent_space, make_request)
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.measured == 2
    assert completed.counts.requested == 2
    order = [e.experiment_id for e in sim.log if isinstance(e, MeasurementCompleted)]
    assert order == ["bench", "energy"]


def test_a_dependent_experiment_is_skipped_when_its_dependency_is_invalid(
    loop, dependent_space, make_request
):
    def bench_out_of_memory(values, experiment, attempt):
        return ("invalid", "CUDA out of memory")

    sim = _walk(loop, dependent_space, make_request, bench_out_of_memory)
    [completed] = sim.measure_next()
    assert isinstance(completed, OperationCompleted)
    assert completed.counts.requested == 1
    assert completed.counts.invalid == 1
    assert len(sim.decisions(SamplesRequested)) == 1


def test_a_dependent_experiment_is_skipped_when_its_dependency_failed_for_good(
    loop, dependent_space, make_request
):
    def bench_lost(values, experiment, attempt):
        return ("fail", False)

    sim = _walk(loop, dependent_space, make_request, bench_lost)
    [completed] = sim.measure_next()
    assert isinstance(completed, OperationCompleted)
    assert completed.counts.failed == 1


def test_a_reused_dependency_feeds_the_dependent_experiment(loop, dependent_space, make_request):
    def reused(values, experiment, attempt):
        if experiment == "bench":
            return ("reused", {"tps": 123.0, "mem": 1})
        return ("valid", {"joules": 1.0})

    sim = _walk(loop, dependent_space, make_request, reused)
    [follow_up] = sim.measure_next()
    assert isinstance(follow_up, SamplesRequested)
    assert follow_up.inputs == ({"bench.tps": 123.0},)
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert (completed.counts.reused, completed.counts.measured) == (1, 1)


def test_a_retried_dependent_experiment_carries_its_inputs_again(
    loop, dependent_space, make_request
):
    def energy_flaky(values, experiment, attempt):
        if experiment == "energy" and attempt == 1:
            return ("fail", True)
        return ("valid", {"tps": 5.0, "mem": 1} if experiment == "bench" else {"joules": 2.0})

    sim = _walk(loop, dependent_space, make_request, energy_flaky)
    sim.measure_next()
    sim.answer_draws()
    sim.measure_next()
    [retry] = sim.tick_at(sim.wake_at)
    assert isinstance(retry, SamplesRequested)
    assert (retry.attempt, retry.inputs) == (2, ({"bench.tps": 5.0},))
    assert [ref.experiment for ref in retry.experiments] == ["energy"]


def test_the_window_counts_an_entity_until_its_dependent_experiments_are_done(
    loop, dependent_space, make_request
):
    sim = loop(dependent_space)
    sim.send(make_request(dependent_space, batch_size=1, seed=1))
    sim.answer_draws()
    decisions = sim.measure_next()
    assert [type(d) for d in decisions] == [SamplesRequested]
    assert decisions[0].points is not None
