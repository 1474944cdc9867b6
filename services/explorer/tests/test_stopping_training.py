"""A budget in training units (`max_training`), and `dur` where a maximum exists.

Every figure below is worked by hand: 20 batches of 8 samples at 1024 samples per epoch are
160/1024 = 0.15625 epochs (128 batches per epoch); at a batch size of 16 they are 0.3125.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from discospace.core import DiscoverySpace, ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.events import (
    OperationCompleted,
    OperationFailed,
    OperationStarted,
    SpaceRegistered,
    StoppingRules,
)
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.explorer.domain.stopping import check_rules, rule_met
from discospace.explorer.domain.training import TrainingTally

T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
ENTITIES = (
    PropertySpec(name="batch_size", values=(8, 16)),
    PropertySpec(name="model_max_length", values=(64, 128)),
)


def experiment(name: str, targets: tuple[str, ...], **options: Any) -> ExperimentSpec:
    return ExperimentSpec(
        actuator="Trainer",
        experiment=name,
        target_properties=targets,
        required_properties=("batch_size", "model_max_length"),
        optional_properties=options,
    )


TRAIN = experiment(
    "train",
    ("train_samples_per_second", "train_runtime"),
    duration="20ba",
    samples_per_epoch=1024,
)


def registered(*experiments: ExperimentSpec) -> SpaceRegistered:
    spec = SpaceSpec(
        sample_store="store-a",
        entity_space=ENTITIES,
        measurement_space=tuple(
            ExperimentRef(actuator=e.actuator, experiment=e.experiment) for e in experiments
        ),
    )
    space_id = DiscoverySpace.from_spec(spec).id
    return SpaceRegistered(
        event_id=f"space-event-{space_id}",
        occurred_at=T0,
        submission_id="sub-1",
        space_id=space_id,
        spec=spec,
        experiments=experiments,
    )


def space_of(*experiments: ExperimentSpec) -> KnownSpace:
    space = known_space(registered(*experiments))
    assert isinstance(space, KnownSpace)
    return space


def result(
    batch_size: int = 8,
    values: dict[str, Any] | None = None,
    experiment_id: str = "train",
    reused: bool = False,
    is_valid: bool = True,
    seconds: float = 1.0,
) -> PairResult:
    entity = {"batch_size": batch_size, "model_max_length": 64}
    reason = None if is_valid else "out of memory"
    shown = {} if values is None else values
    return PairResult("e", entity, experiment_id, is_valid, shown, reason, reused, seconds)


def tally(budget: str, space: KnownSpace, results: list[PairResult]) -> TrainingTally:
    counted = TrainingTally.of(StoppingRules(max_training=budget))
    assert counted is not None
    counted.update(results, space)
    return counted


def stop_for(budget: str, space: KnownSpace, results: list[PairResult]):
    rules = StoppingRules(max_training=budget)
    return rule_met(rules, results, None, T0, T0, tally(budget, space, results))


# -- what a measurement trained, in the budget's unit ----------------------------------------


def test_batches_asked_for_are_counted_in_epochs_with_the_batch_size_and_samples_per_epoch():
    space = space_of(TRAIN)
    four = [result(8), result(16), result(8), result(16)]

    assert float(tally("1ep", space, four).trained) == 0.9375
    assert stop_for("1ep", space, four) is None
    stop = stop_for("1ep", space, [*four, result(8)])
    assert stop is not None
    assert stop.reason == "max_training"
    assert stop.detail == "trained 1.094ep of 1ep"


@pytest.mark.parametrize(
    ("duration", "batch_size", "trained"),
    [("2000tok", 8, "1536tok"), ("100tok", 8, "512tok"), ("1sp", 8, "512tok"),
     ("1ep", 10, "65920tok"), ("3ba", 8, "1536tok")],
)  # fmt: skip
def test_a_duration_asked_in_counted_units_counts_the_whole_batches_it_trains(
    duration: str, batch_size: int, trained: str
) -> None:
    """cpu_train and gpu_train round a counted duration down to whole batches, never below
    one: the asked amount was counted (2000tok of batches of 512 tokens: 3 batches trained,
    1536 tokens, counted 2000), and max_training stopped early or late."""
    asked = experiment("asked", ("train_runtime",), duration=duration, samples_per_epoch=1024)
    one = tally("1tok", space_of(asked), [result(batch_size, experiment_id="asked")])

    assert f"{one.trained}tok" == trained


def test_tokens_reported_are_counted_in_samples_with_the_tokens_per_sample():
    space = space_of(experiment("tokens", ("trained_tokens",)))
    trained = [result(values={"trained_tokens": 4096}, experiment_id="tokens")] * 2

    assert float(tally("128sp", space, trained[:1]).trained) == 64  # 4096 / 64 tokens per sample
    stop = stop_for("128sp", space, trained)
    assert stop is not None
    assert stop.detail == "trained 128sp of 128sp"


def test_epochs_reported_by_a_replayed_run_add_up_to_the_budget():
    space = space_of(experiment("train_to_target", ("target_epoch", "zeus_cost")))
    runs = [result(values={"target_epoch": 12}, experiment_id="train_to_target")] * 5

    assert stop_for("50ep", space, runs[:4]) is None
    stop = stop_for("50ep", space, runs)
    assert stop is not None
    assert stop.detail == "trained 60ep of 50ep"


def test_a_run_asked_to_train_for_seconds_counts_its_rate_times_its_runtime():
    timed = experiment(
        "timed",
        ("train_samples_per_second", "train_runtime"),
        duration="30sec",
        samples_per_epoch=1024,
    )
    values = {"train_samples_per_second": 100.5, "train_runtime": 30.0}
    counted = tally("1ep", space_of(timed), [result(values=values, experiment_id="timed")])

    assert counted.trained * 1024 == 3015


def test_a_run_reporting_figures_beyond_a_float_is_counted_without_an_overflow():
    """A rate and a runtime of 1e308 multiplied to infinity, and round(inf) raised
    OverflowError out of the tally: the engine failed the operation ('operator failed')."""
    timed = experiment("timed", ("train_samples_per_second", "train_runtime"), samples_per_epoch=3)
    huge = {"train_samples_per_second": 1e308, "train_runtime": 1e308}
    counted = tally("1ep", space_of(timed), [result(values=huge, experiment_id="timed")] * 2)

    assert counted.uncounted == 2  # no amount in epochs it can tell
    stop = stop_for("1sec", space_of(timed), [result(values=huge, experiment_id="timed")])
    assert stop is not None
    assert stop.detail == "trained 1.000e+308sec of 1sec"


def test_a_budget_in_seconds_counts_the_training_runtime():
    values = {"train_samples_per_second": 100.5, "train_runtime": 2.5}
    counted = tally("10sec", space_of(TRAIN), [result(values=values)] * 3)
    assert counted.trained == 7.5


def test_a_result_whose_facts_cannot_convert_is_not_counted_and_says_why():
    timed = experiment("timed", ("train_runtime",))
    counted = tally(
        "10ep", space_of(timed), [result(values={"train_runtime": 3.5}, experiment_id="timed")]
    )

    assert counted.trained == 0
    assert counted.uncounted == 1
    assert "3.5sec" in counted.first_problem
    assert "ep" in counted.first_problem
    stop = rule_met(StoppingRules(max_training="10ep"), [], None, T0, T0, counted)
    assert stop is None


def test_an_unusable_maximum_stops_only_the_amounts_that_need_it():
    """A fractional `max_epochs` (2.5) raised out of the facts before any amount was tried: a
    run reporting 2 epochs was not counted toward an ep budget, which needs no maximum."""
    capped = experiment("train_to_target", ("target_epoch",), max_epochs=2.5)
    runs = [result(values={"target_epoch": 2}, experiment_id="train_to_target")]

    counted = tally("10ep", space_of(capped), runs)
    assert (counted.trained, counted.uncounted) == (2, 0)
    in_dur = tally("1dur", space_of(capped), runs)
    assert (in_dur.trained, in_dur.uncounted) == (0, 1)
    assert in_dur.first_problem == (
        "train_to_target: 2.5ep is not a whole number of ep: only dur takes fractions"
    )


def test_a_negative_count_is_not_counted_and_does_not_lower_the_tally():
    space = space_of(experiment("batches", ("trained_batches",)))
    runs = [result(values={"trained_batches": n}, experiment_id="batches") for n in (80, -50, 60)]

    counted = tally("100ba", space, runs)

    assert counted.trained == 140
    assert counted.uncounted == 1
    assert counted.first_problem == "batches: -50ba is below zero"


def test_reused_results_cost_nothing_and_invalid_ones_count_what_they_report():
    space = space_of(TRAIN)
    results = [result(8, reused=True), result(8, is_valid=False), result(16)]

    counted = tally("1ep", space, results)
    assert counted.trained == 0.3125
    assert counted.uncounted == 0


# -- dur: a fraction of a maximum --------------------------------------------------------------


def test_a_budget_in_dur_counts_each_run_as_a_fraction_of_its_own_maximum():
    capped = experiment("train_to_target", ("target_epoch",), max_epochs=20)
    runs = [result(values={"target_epoch": 5}, experiment_id="train_to_target")] * 4

    assert stop_for("1dur", space_of(capped), runs[:3]) is None
    stop = stop_for("1dur", space_of(capped), runs)
    assert stop is not None
    assert stop.detail == "trained 1dur of 1dur"


def test_a_duration_asked_in_dur_is_a_fraction_of_the_runs_max_duration():
    halves = experiment("halves", ("train_runtime",), duration="0.5dur", max_duration="4ep")
    counted = tally("10ep", space_of(halves), [result(experiment_id="halves")] * 5)
    assert counted.trained == 10


def test_a_measurement_time_in_dur_is_a_fraction_of_max_duration():
    rules = StoppingRules(max_duration="2h", max_measurement_time="0.5dur")
    assert check_rules(rules) is None
    spent = [result(seconds=1800.0), result(seconds=1799.0)]
    assert rule_met(rules, spent, None, T0, T0 + timedelta(minutes=1)) is None
    stop = rule_met(rules, [*spent, result(seconds=1.0)], None, T0, T0 + timedelta(minutes=1))
    assert stop is not None
    assert stop.reason == "max_measurement_time"
    assert "3600 s" in stop.detail


@pytest.mark.parametrize(
    ("rules", "sentence"),
    [
        ({"max_measurement_time": "0.5dur"}, "a fraction of max_duration, which is not set"),
        ({"max_duration": "0.5dur"}, "max_duration must be a wall-clock time"),
        ({"max_training": "0ep"}, "max_training must be above zero, not 0ep"),
        ({"max_training": "-3ba"}, "max_training must be above zero, not -3ba"),
    ],
)
def test_rules_that_cannot_apply_are_refused_with_one_sentence(rules, sentence):
    assert sentence in (check_rules(StoppingRules(**rules)) or "")


# -- through the explorer ---------------------------------------------------------------------


def replayed(values: dict[str, Any], experiment_id: str, attempt: int):
    return ("valid", {"target_epoch": 12, "zeus_cost": 1.0})


def test_an_operation_stops_once_its_measurements_trained_the_budget(loop, make_request):
    space = registered(experiment("train_to_target", ("target_epoch", "zeus_cost")))
    sim = loop(space, behaviour=replayed)
    sim.send(make_request(space, stopping={"max_training": "30ep"}))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "max_training"
    assert completed.stop_detail.startswith("trained 36ep of 30ep; 3 measured")


def test_another_stop_still_says_how_much_was_trained(loop, make_request):
    space = registered(experiment("train_to_target", ("target_epoch", "zeus_cost")))
    sim = loop(space, behaviour=replayed)
    sim.send(make_request(space, stopping={"max_training": "500ep"}))
    sim.run()

    [completed] = sim.decisions(OperationCompleted)
    assert completed.stop_reason == "space_exhausted"
    assert "trained 48ep of 500ep" in completed.stop_detail


def test_a_budget_no_experiment_can_count_is_refused_when_the_operation_starts(loop, make_request):
    space = registered(experiment("bench", ("tps",)))
    [failed] = loop(space).send(make_request(space, stopping={"max_training": "50ep"}))

    assert isinstance(failed, OperationFailed)
    assert failed.reason == (
        f"max_training 50ep cannot be counted: no experiment of space '{space.space_id}' "
        "reports a training amount (epochs, batches, samples, tokens, seconds or a duration) "
        "with the facts that convert it to ep"
    )


def test_a_budget_in_dur_without_a_maximum_is_refused_when_the_operation_starts(loop, make_request):
    space = registered(experiment("train_to_target", ("target_epoch",)))
    [failed] = loop(space).send(make_request(space, stopping={"max_training": "3dur"}))

    assert isinstance(failed, OperationFailed)
    assert failed.reason == (
        f"max_training 3dur is a fraction of each run's maximum, and no experiment of space "
        f"'{space.space_id}' declares one (max_duration or max_epochs)"
    )


def test_a_budget_some_experiment_can_count_starts(loop, make_request):
    space = registered(experiment("bench", ("tps",)), TRAIN)
    [started, *_] = loop(space).send(make_request(space, stopping={"max_training": "2ep"}))
    assert isinstance(started, OperationStarted)
