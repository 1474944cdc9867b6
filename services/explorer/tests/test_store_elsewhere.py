"""What an operation sees of its store outside its space (`OperationView.store_elsewhere`), and
how both of its views of the store (inside and outside its space) follow the store's changes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from hypothesis import given, settings
from hypothesis import strategies as st

from discospace.core import parameterized_experiment_id
from discospace.events import (
    MeasurementCompleted,
    OperationCompleted,
    OperationParameters,
    OperationStarted,
    SpaceRegistered,
)
from discospace.explorer.domain import sample_store
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.operator import (
    Finish,
    OperationView,
    OperatorRegistry,
    Proposal,
    Wait,
)
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.sample_store import SampleStores
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.testing.events import measured

from .conftest import SMALL, T0, request, space_registered

BENCH_ID = parameterized_experiment_id("bench", {})


def _space(event: SpaceRegistered) -> KnownSpace:
    known = known_space(event)
    assert isinstance(known, KnownSpace)
    return known


def _result(
    values: dict[str, Any],
    seconds: int,
    *,
    operation: str = "op-old",
    experiment: str = BENCH_ID,
    store: str = "store-a",
    tps: float = 1.0,
) -> MeasurementCompleted:
    return measured(
        values,
        T0 + timedelta(seconds=seconds),
        seconds,
        operation=operation,
        experiment_id=experiment,
        sample_store=store,
        results={"tps": tps, "mem": 1},
        space_id="somewhere",
    )


def _stores(*events: MeasurementCompleted) -> SampleStores:
    stores = SampleStores()
    for event in events:
        stores.record(event)
    return stores


def test_results_outside_the_space_are_seen_elsewhere_and_inside_ones_are_not():
    space = _space(space_registered(SMALL))
    inside = _result({"batch_size": 2, "number_gpus": 1}, 3)
    other_value = _result({"batch_size": 16, "number_gpus": 1}, 2)
    other_names = _result({"batch_size": 2, "number_gpus": 1, "model": "llama"}, 1)
    stores = _stores(inside, other_value, other_names)
    started = T0 + timedelta(minutes=1)
    elsewhere = stores.results_elsewhere(space, "op-new", started)
    assert [r.entity_values for r in elsewhere] == [
        {"batch_size": 2, "number_gpus": 1, "model": "llama"},
        {"batch_size": 16, "number_gpus": 1},
    ]
    assert [r.entity_id for r in stores.results_for(space, "op-new", started)] == [inside.entity_id]


def test_results_after_the_start_of_the_operation_its_own_or_of_other_experiments_are_left_out():
    space = _space(space_registered(SMALL))
    outside = {"batch_size": 2, "number_gpus": 1, "model": "llama"}
    stores = _stores(
        _result(outside, 1, experiment="other-experiment"),
        _result(outside, 2, operation="op-new"),
        _result(outside, 3, store="store-b"),
        _result(outside, 120),
    )
    assert stores.results_elsewhere(space, "op-new", T0 + timedelta(minutes=1)) == ()


def test_the_view_of_elsewhere_changes_with_the_store_not_with_the_cache():
    space = _space(space_registered(SMALL))
    started = T0 + timedelta(minutes=5)
    stores = _stores(_result({"batch_size": 2, "number_gpus": 1, "model": "a"}, 10))
    assert len(stores.results_elsewhere(space, "op-new", started)) == 1
    stores.record(_result({"batch_size": 4, "number_gpus": 1, "model": "a"}, 5))
    seen = stores.results_elsewhere(space, "op-new", started)
    assert [r.entity_values["batch_size"] for r in seen] == [4, 2]


def test_a_result_replaced_by_an_earlier_one_the_operation_may_not_see_leaves_its_view():
    space = _space(space_registered(SMALL))
    started = T0 + timedelta(minutes=1)
    stores = _stores(_result({"batch_size": 2, "number_gpus": 1}, 10))
    assert len(stores.results_for(space, "op-new", started)) == 1
    stores.record(_result({"batch_size": 2, "number_gpus": 1}, 5, operation="op-new"))
    assert stores.results_for(space, "op-new", started) == ()


def test_a_pair_measured_invalid_then_valid_is_seen_valid_as_the_sampler_reuses_it():
    """The earliest result was kept, valid or not: a pair that ran out of memory once and
    was measured fine later was told to an optimizer as infeasible (never proposed), while the
    sampler's memo, which answers every request for the pair, keeps the valid one."""
    space = _space(space_registered(SMALL))
    values = {"batch_size": 8, "number_gpus": 2}
    invalid = _result(values, 5, operation="op-x").model_copy(
        update={"is_valid": False, "values": {}, "invalid_reason": "out of memory"}
    )
    valid = _result(values, 10, operation="op-y", tps=16.0)
    started = T0 + timedelta(minutes=1)
    for events in ((invalid, valid), (valid, invalid)):
        [seen] = _stores(*events).results_for(space, "op-new", started)
        assert (seen.is_valid, seen.values["tps"]) == (True, 16.0)


def test_an_entity_whose_values_the_space_would_convert_is_another_entity_seen_elsewhere():
    """The text "4" (a space listing batch sizes as text) converts to the number 4, but is
    another entity, of another id: taken as inside, an optimizer was told the point twice."""
    space = _space(space_registered(SMALL))
    text = _result({"batch_size": "4", "number_gpus": 1}, 5, tps=4.0)
    number = _result({"batch_size": 4, "number_gpus": 1}, 6, tps=9.0)
    stores = _stores(text, number)
    started = T0 + timedelta(minutes=1)

    assert [r.entity_values for r in stores.results_for(space, "op-new", started)] == [
        {"batch_size": 4, "number_gpus": 1}
    ]
    assert [r.entity_values for r in stores.results_elsewhere(space, "op-new", started)] == [
        {"batch_size": "4", "number_gpus": 1}
    ]


_VIEWERS = [("op-new", 100), ("op-other", 150), ("op-old", 50)]
"""(operation, seconds after T0 it started): the operations whose views are read."""
_EVENTS = st.lists(
    st.tuples(
        st.sampled_from([1, 2, 4, 16, "4"]),  # "4": another entity than 4, seen elsewhere
        st.sampled_from([None, "llama"]),
        st.integers(min_value=0, max_value=200),
        st.sampled_from(["op-old", "op-new", "op-other"]),
        st.sampled_from([BENCH_ID, "other-experiment"]),
        st.sampled_from(["fold", "read", "forget"]),
        st.booleans(),  # valid
    ),
    max_size=40,
    unique_by=lambda event: (event[2], event[3]),
)


def _scanned(
    recorded: list[MeasurementCompleted],
    space: KnownSpace,
    operation: str,
    started: Any,
    *,
    inside: bool,
) -> tuple[Any, ...]:
    """The rule of both views, applied by one pass over every result recorded (the reference):
    per pair, a valid result before an invalid one, then the earliest, then the smallest event
    id (the sampler's memo's rule); inside the space only as it is (values its domains hold
    unconverted)."""
    experiments = {experiment.id for experiment in space.experiments}
    names = set(space.entity_space.names)
    kept: dict[tuple[str, str], MeasurementCompleted] = {}
    for event in recorded:
        key = (event.entity_id, event.experiment_id)
        rank = (not event.is_valid, event.occurred_at, event.event_id)
        known = kept.get(key)
        if known is None or rank < (not known.is_valid, known.occurred_at, known.event_id):
            kept[key] = event

    def as_it_is(values: dict[str, Any]) -> bool:
        return (
            set(values) == names
            and values in space.entity_space
            and all(
                space.entity_space.get_property(n).domain.normalise(v) == v
                for n, v in values.items()
            )
        )

    chosen = [
        event
        for event in kept.values()
        if event.occurred_at < started
        and event.operation_id != operation
        and event.experiment_id in experiments
        and as_it_is(dict(event.entity_values)) == inside
    ]
    chosen.sort(key=lambda event: (event.occurred_at, event.event_id))
    return tuple(PairResult.of(event) for event in chosen)


@settings(max_examples=300, deadline=None)
@given(_EVENTS)
def test_views_read_between_changes_are_what_a_pass_over_the_store_gives(events):
    """Views follow the store change by change (results replaced by earlier or valid ones,
    results of the operation itself, other experiments, entities of text values, views dropped
    and made again): every read gives what one pass over every result recorded gives then."""
    space = _space(space_registered(SMALL))
    followed = SampleStores()
    recorded: list[MeasurementCompleted] = []
    for size, model, seconds, operation, experiment, action, valid in events:
        values = {"batch_size": size, "number_gpus": 1} | ({"model": model} if model else {})
        result = _result(values, seconds, operation=operation, experiment=experiment)
        if not valid:
            result = result.model_copy(
                update={"is_valid": False, "values": {}, "invalid_reason": "out of memory"}
            )
        followed.record(result)
        recorded.append(result)
        if action == "forget":
            followed.forget(operation)
        if action == "fold":
            continue
        for viewer, at in _VIEWERS:
            started = T0 + timedelta(seconds=at)
            for inside, read in ((True, followed.results_for), (False, followed.results_elsewhere)):
                expected = _scanned(recorded, space, viewer, started, inside=inside)
                assert read(space, viewer, started) == expected


class Recording:
    """An operator that keeps what it saw elsewhere, then finishes."""

    name: ClassVar[str] = "recording"

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], ...]] = []

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        return None

    def propose(self, view: OperationView) -> Proposal:
        self.seen.append(tuple(dict(r.entity_values) for r in view.store_elsewhere))
        return Finish("operator_finished", "seen") if view.in_flight == 0 else Wait()


def test_an_operation_sees_other_spaces_results_from_before_it_started_also_after_a_restart(loop):
    space = space_registered(SMALL)
    sim = loop(space)
    recording = Recording()
    sim.engine = Engine(OperatorRegistry([recording]), sim.timing)
    sim.send(_result({"batch_size": 2, "number_gpus": 1, "model": "llama"}, -60))
    made = sim.send(request(space, "op-new", operator="recording"))
    assert [type(e) for e in made] == [OperationStarted, OperationCompleted]
    assert recording.seen == [({"batch_size": 2, "number_gpus": 1, "model": "llama"},)]
    sim.crash(unpublished=len(made))
    sim.log.append(_result({"batch_size": 4, "number_gpus": 1, "model": "llama"}, 3600))
    again = sim.restart()
    assert [e.event_id for e in again] == [e.event_id for e in made]
    assert recording.seen[1] == recording.seen[0]


def test_a_busy_store_keeps_only_the_changes_its_views_have_not_read(monkeypatch):
    monkeypatch.setattr(sample_store, "TRIM_EVERY", 5)
    space = _space(space_registered(SMALL))
    started = T0 + timedelta(seconds=100)
    recorded = [_result({"batch_size": 2, "number_gpus": 1}, 1)]
    stores = _stores(*recorded)
    store = stores.stores["store-a"]

    def read(inside: bool) -> None:
        view = stores.results_for if inside else stores.results_elsewhere
        assert view(space, "op-new", started) == _scanned(
            recorded, space, "op-new", started, inside=inside
        )

    for i in range(30):  # both views read every third result: few changes are kept
        recorded.append(_result({"batch_size": 4, "number_gpus": 1, "model": f"a{i}"}, 2 + i))
        stores.record(recorded[-1])
        if i % 3 == 0:
            read(True)
            read(False)
        assert len(store.changes) <= 5 + 3
    trims = 0
    trim = stores._trim

    def counted(*args: Any) -> None:
        nonlocal trims
        trims += 1
        trim(*args)

    monkeypatch.setattr(stores, "_trim", counted)
    for i in range(30):  # the inside view reads no more: its changes are kept for it
        recorded.append(_result({"batch_size": 8, "number_gpus": 1, "model": f"b{i}"}, 40 + i))
        stores.record(recorded[-1])
        read(False)
    assert len(store.changes) >= 30
    assert trims <= 30 // 5, "a lagging view made the store try to drop changes at every one"
    read(True)
