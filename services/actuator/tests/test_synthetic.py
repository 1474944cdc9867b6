"""The synthetic actuator: deterministic values, invalid results and transient failures."""

from __future__ import annotations

import time

import pytest

from discospace.actuator.plugin import Actuator, MeasurementTask, TransientFailure
from discospace.actuator.synthetic import (
    InvalidRule,
    SyntheticActuator,
    SyntheticExperiment,
    SyntheticParameters,
)
from discospace.core import Entity, Experiment
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement


def _actuator(**parameters) -> SyntheticActuator:
    return SyntheticActuator(SyntheticParameters(**parameters))


def _task(actuator, values, attempt=1, parameterization=None, inputs=None) -> MeasurementTask:
    [spec] = actuator.catalog()[:1]
    experiment = Experiment.from_spec(spec).parameterize(parameterization or {})
    entity = Entity.of(values)
    return MeasurementTask("req-1", entity, experiment, attempt, inputs or {})


async def _values(actuator, values, **task):
    outcome = await actuator.measure(_task(actuator, values, **task))
    assert isinstance(outcome, ValidMeasurement)
    return outcome.values


def test_the_synthetic_actuator_offers_its_experiments_under_its_own_name():
    actuator = _actuator(
        experiments=[{"experiment": "a"}, {"experiment": "b", "target_properties": ["x"]}]
    )

    assert isinstance(actuator, Actuator)
    assert [(spec.actuator, spec.experiment) for spec in actuator.catalog()] == [
        ("synthetic", "a"),
        ("synthetic", "b"),
    ]
    assert actuator.catalog()[1].target_properties == ("x",)


async def test_the_same_entity_always_gets_the_same_values_for_every_target():
    entity = {"batch_size": 8, "model_name": "llama-7b", "model_max_length": 1024}

    first = await _values(_actuator(), entity)
    again = await _values(_actuator(), dict(reversed(list(entity.items()))))

    assert first == again
    assert set(first) == {"throughput", "peak_memory"}
    assert all(value > 0 for value in first.values())


async def test_other_entities_and_other_seeds_get_other_values():
    base = await _values(_actuator(), {"batch_size": 8, "model_name": "llama-7b"})
    other_model = await _values(_actuator(), {"batch_size": 8, "model_name": "granite-8b"})
    other_seed = await _values(_actuator(seed=1), {"batch_size": 8, "model_name": "llama-7b"})

    assert base != other_model
    assert base != other_seed


async def test_values_change_smoothly_with_a_numeric_property():
    actuator = _actuator()
    previous = await _values(actuator, {"batch_size": 64})
    for batch in range(65, 80):
        current = await _values(actuator, {"batch_size": batch})
        for target, value in current.items():
            assert abs(value / previous[target] - 1) < 0.03
        previous = current


async def test_the_experiments_options_and_inputs_enter_the_values():
    actuator = _actuator()
    entity = {"batch_size": 8}

    default = await _values(actuator, entity)
    longer = await _values(actuator, entity, parameterization={"steps": 500})
    with_input = await _values(actuator, entity, inputs={"other.throughput": 1e4})

    assert len({tuple(default.values()), tuple(longer.values()), tuple(with_input.values())}) == 3


async def test_an_entity_whose_batch_does_not_fit_is_invalid_out_of_memory():
    actuator = _actuator()

    too_big = await actuator.measure(_task(actuator, {"batch_size": 128, "model_max_length": 8192}))
    fits = await actuator.measure(_task(actuator, {"batch_size": 64, "model_max_length": 8192}))

    assert too_big == InvalidMeasurement(reason="out of memory")
    assert isinstance(fits, ValidMeasurement)


async def test_the_invalid_rule_is_configurable_and_can_be_turned_off():
    entity = {"batch_size": 128, "model_max_length": 8192}
    custom = _actuator(invalid_when={"product_of": ["batch_size"], "above": 100, "reason": "no"})
    never = _actuator(invalid_when=None)

    assert await custom.measure(_task(custom, entity)) == InvalidMeasurement(reason="no")
    assert isinstance(await never.measure(_task(never, entity)), ValidMeasurement)


def test_the_invalid_rule_ignores_entities_that_lack_one_of_its_numbers():
    rule = InvalidRule()

    assert not rule.violated_by({"batch_size": 10**6})
    assert not rule.violated_by({"batch_size": 10**6, "model_max_length": "long"})
    assert rule.violated_by({"batch_size": 10**6, "model_max_length": 2})


async def test_about_the_failure_rate_of_attempts_fail_transiently_and_always_the_same():
    actuator = _actuator(failure_rate=0.2)
    entities = [{"batch_size": b} for b in range(1000)]

    outcomes = [await actuator.measure(_task(actuator, e)) for e in entities]
    again = [await actuator.measure(_task(actuator, e)) for e in entities]

    failed = [o for o in outcomes if isinstance(o, TransientFailure)]
    assert 150 <= len(failed) <= 250
    assert outcomes == again
    assert failed[0].reason == "synthetic transient failure (attempt 1)"


async def test_a_later_attempt_draws_its_failure_anew():
    actuator = _actuator(failure_rate=0.5)
    entities = [{"batch_size": b} for b in range(200)]

    first = [await actuator.measure(_task(actuator, e, attempt=1)) for e in entities]
    second = [await actuator.measure(_task(actuator, e, attempt=2)) for e in entities]

    recovered = [
        a
        for a, b in zip(first, second, strict=True)
        if isinstance(a, TransientFailure) and isinstance(b, ValidMeasurement)
    ]
    assert len(recovered) > 20


@pytest.mark.parametrize(("rate", "fails"), [(0.0, False), (1.0, True)])
async def test_a_failure_rate_of_zero_never_fails_and_of_one_always_fails(rate, fails):
    actuator = _actuator(failure_rate=rate)

    for batch in range(50):
        outcome = await actuator.measure(_task(actuator, {"batch_size": batch}))
        assert isinstance(outcome, TransientFailure) is fails


async def test_a_measurement_takes_the_configured_latency():
    actuator = _actuator(latency_s=0.2)

    started = time.perf_counter()
    await actuator.measure(_task(actuator, {"batch_size": 1}))

    assert time.perf_counter() - started >= 0.2


def test_a_synthetic_experiment_becomes_a_catalog_entry_of_the_synthetic_actuator():
    spec = SyntheticExperiment(experiment="x", required_properties=("batch_size",)).to_spec()

    assert (spec.actuator, spec.experiment, spec.required_properties) == (
        "synthetic",
        "x",
        ("batch_size",),
    )
