"""The sampler's answer to a SamplesRequested: drawn entities, requests to pools, reuses."""

from __future__ import annotations

import pytest

from discospace.core import ExperimentRef, sampling
from discospace.events import (
    MeasurementFailed,
    MeasurementRequested,
    MeasurementReused,
    SamplesDrawn,
    measurement_request_id,
)
from discospace.sampler.domain import (
    SamplerState,
    UnknownSpaceError,
    decide,
    evolve_memo,
    evolve_pools,
    evolve_space,
)

BENCH = ExperimentRef(actuator="synthetic", experiment="bench")
PROFILE = ExperimentRef(actuator="synthetic", experiment="profile")


@pytest.fixture
def state(make) -> SamplerState:
    state = SamplerState()
    evolve_space(state, make.registered())
    evolve_pools(state, make.pool("a100", "A100"))
    evolve_pools(state, make.pool("h100", "H100"))
    return state


def _space(make):
    return make.registered()


def _of(kind, answers):
    return [event for event in answers if isinstance(event, kind)]


def test_a_request_is_answered_with_the_drawn_entities_then_one_request_per_pair(state, make):
    request = make.request(_space(make), count=3, experiments=(BENCH, PROFILE))

    answers = decide(state, request, make.at)

    drawn = answers[0]
    assert isinstance(drawn, SamplesDrawn)
    expected = sampling(state.spaces.get(request.space_id).entity_space, "random", 7).take(3)
    assert drawn.entity_ids == tuple(entity.id for entity in expected)
    assert (drawn.request_index, drawn.next_position, drawn.exhausted) == (0, 3, False)
    requested = _of(MeasurementRequested, answers)
    assert [(r.entity_id, r.experiment_id) for r in requested] == [
        (entity.id, experiment) for entity in expected for experiment in ("bench", "profile")
    ]
    assert len(answers) == 1 + 6


def test_each_request_goes_to_the_pool_of_the_entitys_gpu_model_on_its_topic(state, make, topics):
    answers = decide(state, make.request(_space(make), count=8), make.at)

    for event in _of(MeasurementRequested, answers):
        assert event.pool == str(event.entity_values["gpu_model"]).lower()
        assert event.topic(topics) == topics.measure(event.pool)
        assert event.key() == event.entity_id.encode()


def test_a_measurement_request_names_its_whole_subject(state, make):
    request = make.request(_space(make), count=1, experiments=(BENCH,))

    [_, event] = decide(state, request, make.at)

    assert isinstance(event, MeasurementRequested)
    assert event.request_id == measurement_request_id("op-1", event.entity_id, "bench")
    assert (event.operation_id, event.space_id, event.sample_store) == (
        "op-1",
        request.space_id,
        make.store,
    )
    assert event.experiment == BENCH
    assert event.attempt == 1
    assert event.causation_id == request.event_id
    assert event.correlation_id == "op-1"
    assert event.occurred_at == make.at


def test_answering_the_same_request_twice_yields_identical_events(state, make):
    request = make.request(_space(make), count=4, experiments=(BENCH, PROFILE))

    first = decide(state, request, make.at)
    again = decide(state, request, make.at)

    assert first == again
    assert len({event.event_id for event in first}) == len(first)


def test_a_pair_the_sample_store_holds_is_reused_and_not_requested(state, make):
    request = make.request(_space(make), count=4)
    earlier = decide(state, request, make.at)
    reused_entity = _of(MeasurementRequested, earlier)[1].entity_values
    memo = make.completed(reused_entity, values={"throughput": 99.5})
    evolve_memo(state, memo)

    answers = decide(state, make.request(_space(make), count=4, operation_id="op-2"), make.at)

    [reused] = _of(MeasurementReused, answers)
    assert reused.entity_values == reused_entity
    assert (reused.reused_event_id, reused.values, reused.is_valid) == (
        memo.event_id,
        {"throughput": 99.5},
        True,
    )
    assert reused.request_id == measurement_request_id("op-2", reused.entity_id, "bench")
    assert len(_of(MeasurementRequested, answers)) == 3


def test_an_entity_found_invalid_is_reused_as_invalid_and_never_measured_again(state, make):
    point = {"batch_size": 8, "gpu_model": "H100"}
    evolve_memo(state, make.completed(point, valid=False))

    answers = decide(state, make.request(_space(make), points=(point,)), make.at)

    [reused] = answers[1:]
    assert isinstance(reused, MeasurementReused)
    assert (reused.is_valid, reused.invalid_reason, reused.values) == (False, "out of memory", {})


def test_a_measurement_in_another_sample_store_is_measured_again(state, make):
    point = {"batch_size": 8, "gpu_model": "H100"}
    evolve_memo(state, make.completed(point, store="store-b"))

    answers = decide(state, make.request(_space(make), points=(point,)), make.at)

    assert isinstance(answers[1], MeasurementRequested)


def test_an_operation_that_does_not_reuse_measures_again(state, make):
    point = {"batch_size": 8, "gpu_model": "H100"}
    evolve_memo(state, make.completed(point))

    request = make.request(_space(make), points=(point,), single_measurement=False)
    answers = decide(state, request, make.at)

    assert isinstance(answers[1], MeasurementRequested)


def test_a_pair_already_measured_for_this_operation_is_not_answered_again(state, make):
    request = make.request(_space(make), count=2)
    first = decide(state, request, make.at)
    done = _of(MeasurementRequested, first)[0]
    evolve_memo(state, make.completed(done.entity_values, operation="op-1"))

    again = decide(state, request, make.at)

    assert again[0] == first[0]
    assert _of(MeasurementRequested, again) == _of(MeasurementRequested, first)[1:]
    assert not _of(MeasurementReused, again)


@pytest.mark.parametrize("single_measurement", [True, False])
def test_a_pair_measured_for_this_operation_is_not_answered_again_when_another_result_is_kept(
    state, make, single_measurement
):
    """The memo keeps the earliest result of a pair: another operation's, which landed beside
    this one's. A request read again then sent the pair to a pool again (or reused the other
    result) though the operation had its own."""
    point = {"batch_size": 8, "gpu_model": "H100"}
    request = make.request(_space(make), points=(point,), single_measurement=single_measurement)
    decide(state, request, make.at)
    evolve_memo(state, make.completed(point, operation="op-other", minutes=0))
    evolve_memo(state, make.completed(point, operation="op-1", minutes=5))

    again = decide(state, request, make.at)

    assert [type(answer) for answer in again] == [SamplesDrawn]


def test_a_retry_carries_its_attempt_and_the_inputs_of_its_point(state, make):
    point = {"batch_size": 2, "gpu_model": "A100"}
    inputs = ({"bench.throughput": 42.5},)
    request = make.request(_space(make), points=(point,), inputs=inputs, attempt=3)

    [_, event] = decide(state, request, make.at)

    assert isinstance(event, MeasurementRequested)
    assert (event.attempt, event.inputs) == (3, {"bench.throughput": 42.5})
    assert event.request_id == measurement_request_id("op-1", event.entity_id, "bench")


def test_a_parameterized_experiment_is_a_distinct_pair_with_its_own_id(state, make):
    point = {"batch_size": 2, "gpu_model": "A100"}
    evolve_memo(state, make.completed(point))
    longer = ExperimentRef(actuator="synthetic", experiment="bench", parameterization={"steps": 50})

    answers = decide(
        state, make.request(_space(make), points=(point,), experiments=(longer,)), make.at
    )

    [event] = answers[1:]
    assert isinstance(event, MeasurementRequested)
    assert event.experiment_id == "bench-steps.50"


def test_a_pair_no_pool_can_run_fails_retryably_with_the_reason(make):
    state = SamplerState()
    evolve_space(state, make.registered())
    evolve_pools(state, make.pool("a100", "A100"))
    point = {"batch_size": 2, "gpu_model": "H100"}

    [_, failed] = decide(state, make.request(_space(make), points=(point,)), make.at)

    assert isinstance(failed, MeasurementFailed)
    assert failed.retryable
    assert failed.worker_id == "sampler"
    assert "GPU model 'H100'" in failed.reason


def test_refused_points_are_listed_in_the_answer_and_get_no_measurement(state, make):
    points = ({"batch_size": 3, "gpu_model": "A100"},)

    answers = decide(state, make.request(_space(make), points=points), make.at)

    [drawn] = answers
    assert isinstance(drawn, SamplesDrawn)
    assert drawn.entity_ids == ()
    assert drawn.rejected_points[0].startswith("batch_size=3, gpu_model=A100: ")


def test_a_request_for_a_space_not_seen_yet_raises_unknown_space(make):
    with pytest.raises(UnknownSpaceError, match="is not registered"):
        decide(SamplerState(), make.request(_space(make)), make.at)


def test_a_space_is_not_routed_to_a_pool_that_redefined_its_experiment(make):
    """The space was registered with `bench` measuring `throughput`; its only pool now announces
    a `bench` of other targets: its pairs are failed for now, saying why, not measured there."""

    registered = make.pool("a100").experiments[0]
    redefined = registered.model_copy(update={"target_properties": ("energy",)})
    state = SamplerState()
    evolve_space(state, make.registered())
    evolve_pools(state, make.pool("a100", None, redefined))

    answers = decide(state, make.request(_space(make), count=2), make.at)

    assert _of(MeasurementRequested, answers) == []
    failures = _of(MeasurementFailed, answers)
    assert len(failures) == 2
    assert all(failure.retryable for failure in failures)
    assert "defined otherwise than when the space was registered" in failures[0].reason
