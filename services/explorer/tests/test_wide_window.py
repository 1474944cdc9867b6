"""A wide window costs what changes, not the window, every decision round.

Users with many actuator workers, or replaying a table of 10^5 rows, keep thousands of
entities in flight. The engine reads again only the progress of the entities whose facts
changed since its last round, so an operation's work grows with its measurements, not with
their product by the window. (Counted, not timed: tests check behaviour.)
"""

from __future__ import annotations

from typing import Any

from discospace.core import PropertySpec
from discospace.events import MeasurementFailed, OperationCompleted, SamplesRequested
from discospace.explorer.domain import decide


def _space(make_space, entities: int):
    return make_space(
        (
            PropertySpec(name="batch_size", values=tuple(range(1, entities // 2 + 1))),
            PropertySpec(name="number_gpus", values=(1, 2)),
        )
    )


def _counted(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = decide.entity_progress

    def counting(state, space, policy, entity):
        calls.append(entity)
        return real(state, space, policy, entity)

    monkeypatch.setattr(decide, "entity_progress", counting)
    return calls


def test_an_operation_with_a_thousand_in_flight_reads_each_entity_a_few_times(
    loop, make_space, make_request, monkeypatch
):
    space = _space(make_space, 1_000)
    sim = loop(space)
    calls = _counted(monkeypatch)
    sim.send(make_request(space, batch_size=1_000, number_entities=1_000, seed=5))
    sim.run()
    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.measured == 1_000
    assert sim.most_in_flight == 1_000
    # each entity is read when drawn, when its request folds and when its result lands, and
    # once more for the end's counts; reading the whole window every round would be ~500,000
    assert len(calls) <= 5 * 1_000


def test_retries_and_dependent_experiments_are_followed_up_in_a_wide_window(
    loop, make_space, make_request, dependent_space, monkeypatch
):
    """Every entity's first attempt fails transiently: each is retried once its backoff ends,
    then its dependent experiment is requested with the value it needs, and nothing else is
    read again meanwhile."""

    properties = (
        PropertySpec(name="batch_size", values=tuple(range(1, 301))),
        PropertySpec(name="number_gpus", values=(1, 2)),
    )
    space = make_space(properties, dependent_space.experiments)  # bench, then energy on it
    measures = loop(space).behaviour

    def fails_first(values: dict[str, Any], experiment: str, attempt: int) -> tuple[str, Any]:
        return ("fail", True) if attempt == 1 else measures(values, experiment, attempt)

    sim = loop(space, behaviour=fails_first)
    calls = _counted(monkeypatch)
    sim.send(make_request(space, batch_size=600, number_entities=600, seed=2))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.counts.measured == 1_200  # both experiments of every entity
    assert completed.counts.failed == 0
    retries = [r for r in sim.decisions(SamplesRequested) if r.attempt == 2]
    assert len(retries) == 1_200
    failures = [e for e in sim.log if isinstance(e, MeasurementFailed)]
    assert len(failures) == 1_200
    assert len(calls) <= 12 * 600
