"""Warm starts: an optimizer is told what the shared sample store already holds."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from discospace.bench.harness import T0, Measured, Prior, run_operation
from discospace.core import Entity, InvalidMeasurement, ValidMeasurement
from discospace.events import MeasurementCompleted, OperationCompleted, OperationParameters
from discospace.explorer.domain.sample_store import SampleStores
from discospace.explorer.domain.spaces import known_space

MAX_TPS = {"property": "tps", "direction": "max"}
SMALL_POINTS = [{"batch_size": b, "number_gpus": g} for b in (1, 2, 4, 8) for g in (1, 2)]


def tps(entity: Entity, experiment: Any) -> Measured:
    value = float(entity["batch_size"] * entity["number_gpus"])
    return Measured(ValidMeasurement(values={"tps": value, "mem": 1}), duration_seconds=10.0)


def prior(points: list[dict[str, Any]]) -> list[Prior]:
    return [Prior(p, "bench", tps(Entity.of(p), None)) for p in points]


def tpe(**options: Any) -> OperationParameters:
    return OperationParameters(seed=3, objective=MAX_TPS, options=options)


def test_an_optimizer_never_pays_for_what_the_store_held_before_it_started(small_space):
    record = run_operation(small_space, "optuna_tpe", tpe(), tps, prior=prior(SMALL_POINTS[:6]))

    completed = record.ended
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "space_exhausted"
    assert completed.counts.measured == 2
    assert completed.counts.reused == 0
    assert sorted(map(str, record.requested)) == sorted(map(str, SMALL_POINTS[6:]))


def test_a_space_the_store_already_covers_ends_at_once_with_nothing_measured(small_space):
    record = run_operation(small_space, "optuna_tpe", tpe(), tps, prior=prior(SMALL_POINTS))

    completed = record.ended
    assert isinstance(completed, OperationCompleted)
    assert completed.stop_reason == "space_exhausted"
    assert completed.counts.measured == 0
    assert record.requested == []


def test_invalid_results_in_the_store_are_told_and_never_proposed(small_space):
    oom = [Prior(p, "bench", Measured(InvalidMeasurement(reason="oom"))) for p in SMALL_POINTS[:4]]
    record = run_operation(small_space, "optuna_tpe", tpe(), tps, prior=oom)

    proposed = {Entity.of(p).id for p in record.requested}
    assert proposed == {Entity.of(p).id for p in SMALL_POINTS[4:]}


def test_without_warm_start_the_store_is_not_told_and_what_it_held_is_reused(small_space):
    parameters = tpe(warm_start=False)
    record = run_operation(
        small_space, "optuna_tpe", parameters, tps, prior=prior(SMALL_POINTS[:6])
    )

    completed = record.ended
    assert isinstance(completed, OperationCompleted)
    assert completed.counts.reused == 6
    assert completed.counts.measured == 2


def completed_event(
    number: int, point: dict[str, Any], operation: str, seconds: float, space_id: str
) -> MeasurementCompleted:
    entity = Entity.of(point)
    return MeasurementCompleted(
        event_id=f"m-{number}",
        occurred_at=T0 + timedelta(seconds=seconds),
        operation_id=operation,
        request_id=f"req-{number}",
        space_id=space_id,
        sample_store="store-a",
        entity_id=entity.id,
        entity_values=point,
        experiment_id="bench",
        worker_id="w0",
        values={"tps": 1.0},
        is_valid=True,
        uncertainty={},
        duration_seconds=1.0,
    )


def test_the_warm_start_holds_results_from_before_the_start_whatever_order_they_were_read_in(
    small_space,
):
    space = known_space(small_space)
    assert not isinstance(space, str)
    events = [
        completed_event(1, SMALL_POINTS[0], "op-old", -60, space.space_id),
        completed_event(2, SMALL_POINTS[1], "op-old", 60, space.space_id),
        completed_event(3, SMALL_POINTS[2], "op-new", -30, space.space_id),
        completed_event(4, {"batch_size": 1, "number_gpus": 1, "model": "x"}, "op-old", -50, "s"),
        completed_event(5, SMALL_POINTS[3], "op-other", -10, space.space_id),
    ]
    forward, backward = SampleStores(), SampleStores()
    for event in events:
        forward.record(event)
    for event in reversed(events):
        backward.record(event)

    seen = forward.results_for(space, "op-new", T0)

    assert [o.entity_values for o in seen] == [SMALL_POINTS[0], SMALL_POINTS[3]]
    assert backward.results_for(space, "op-new", T0) == seen
