"""`zeus_bso` as an explorer operator: options, space, proposals, and runs inside the engine."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from discospace.core import ExperimentSpec, PropertySpec
from discospace.events import OperationCompleted, OperationFailed, OperationParameters
from discospace.events.operations import OperatorChoice
from discospace.explorer.domain.decide import Engine
from discospace.explorer.domain.operator import MAX_FAILED_FOR_GOOD as MAX_FAILED_RUNS
from discospace.explorer.domain.operator import (
    Finish,
    Measure,
    OperationView,
    OperatorRegistry,
    Wait,
)
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.explorer.operators.zeus.operator import ZeusBso, attempt_of

RUN = ExperimentSpec(
    actuator="replay",
    experiment="train_to_target",
    target_properties=("time_to_accuracy", "energy_to_accuracy", "converged"),
    required_properties=("dataset", "batch_size", "power_limit"),
)
PROPERTIES = (
    PropertySpec(name="dataset", values=("toy",)),
    PropertySpec(name="batch_size", values=(8, 16, 32, 64)),
    PropertySpec(name="power_limit", values=(100, 200)),
    PropertySpec(name="recurrence", range=(0, 10_000), interval=1),
)
OPTIONS = {"default_batch_size": 32, "recurrences": 6}
T0 = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)


@pytest.fixture
def registered(make_space):
    return make_space(PROPERTIES, (RUN,))


@pytest.fixture
def space(registered) -> KnownSpace:
    entry = known_space(registered)
    assert isinstance(entry, KnownSpace)
    return entry


def parameters(**options: Any) -> OperationParameters:
    return OperationParameters(seed=3, single_measurement=False, options={**OPTIONS, **options})


def outcome(point: dict[str, Any], cost: float, converged: bool = True, **extra: Any) -> PairResult:
    """A run of cost `cost` at eta 0.5 (energy 2 * cost, no time)."""
    values = {"time_to_accuracy": 0.0, "energy_to_accuracy": 2 * cost, "converged": int(converged)}
    entity_id = "e-" + "-".join(str(point[k]) for k in sorted(point))
    return PairResult(entity_id, point, "train_to_target", True, {**values, **extra}, None, False)


def view(space: KnownSpace, outcomes=(), pending=(), free: int = 1, **options: Any):
    """The operation after `outcomes` arrived, with the runs `pending` still in flight."""
    entities = {o.entity_id: o.entity_values for o in outcomes}
    entities.update({f"pending-{k}": values for k, values in enumerate(pending)})
    return OperationView(
        operation_id="op-1",
        parameters=parameters(**options),
        space=space,
        started_at=T0,
        now=T0,
        free_slots=free,
        in_flight=len(pending),
        unsettled=frozenset(f"pending-{k}" for k in range(len(pending))),
        drawn_by_strategy=0,
        entities_drawn=0,
        exhausted=False,
        entities=entities,
        outcomes=tuple(outcomes),
        best=None,
    )


def point(batch_size: int, power_limit: int, recurrence: int) -> dict[str, Any]:
    return {
        "dataset": "toy",
        "batch_size": batch_size,
        "power_limit": power_limit,
        "recurrence": recurrence,
    }


# -- check ---------------------------------------------------------------------------------


def test_a_well_formed_operation_is_accepted(space):
    assert ZeusBso().check(parameters(), space) is None


def test_the_default_batch_size_is_required(space):
    bare = OperationParameters(single_measurement=False, options={})
    assert ZeusBso().check(bare, space) == ("zeus_bso option 'default_batch_size': Field required")


def test_an_unknown_option_is_named(space):
    assert "option 'etta'" in (ZeusBso().check(parameters(etta=0.4), space) or "")


def test_an_out_of_range_option_is_named(space):
    assert "option 'eta'" in (ZeusBso().check(parameters(eta=1.5), space) or "")


def test_a_default_batch_size_outside_the_space_is_refused(space):
    problem = ZeusBso().check(parameters(default_batch_size=48), space)
    assert problem == "the default batch size 48 is not one of 8, 16, 32, 64"


def test_a_shared_across_property_the_space_lacks_is_refused(space):
    """Only the space's own properties are compared with other jobs' runs: a misspelt name
    changed nothing, and no run of another GPU was used."""
    assert ZeusBso().check(parameters(shared_across=["gpu_modle"]), space) == (
        "zeus_bso option 'shared_across' names 'gpu_modle', which space "
        f"'{space.space_id}' does not have (its properties: dataset, batch_size, power_limit, "
        "recurrence)"
    )
    assert ZeusBso().check(parameters(shared_across=["dataset"]), space) is None
    assert ZeusBso().check(parameters(shared_across=[]), space) is None


def test_a_recurrence_domain_with_a_gap_is_refused(make_space):
    """Run i is recurrence i: a retry numbered into the gap failed the operation part-way
    ('property recurrence has the value 6, which is not in its domain')."""
    gap = (*PROPERTIES[:3], PropertySpec(name="recurrence", values=(0, 1, 2, 3, 4, 5, 7, 8, 9)))
    entry = known_space(make_space(gap, (RUN,)))
    assert isinstance(entry, KnownSpace)

    assert ZeusBso().check(parameters(), entry) == (
        "zeus_bso needs 'recurrence' to hold 0, 1, 2, ... without a gap (run i is recurrence "
        "i, the retries beyond the runs that converge too): it does not hold 6"
    )


def test_a_run_that_failed_for_good_is_not_in_flight_while_another_runs(space):
    """It held the pruning walk at its batch size (16) while anything else ran, so with more
    than one run at a time the walk never went on and the bandit never ran."""
    first = outcome(point(32, 200, 0), 10.0, trained_power_limit=100)
    running = view(space, [first], pending=[point(32, 100, 2)], free=1)
    failed = dict(running.entities) | {"failed-16": point(16, 200, 1)}  # not unsettled

    proposal = ZeusBso().propose(replace(running, entities=failed))

    assert isinstance(proposal, Measure)
    assert proposal.points[0]["batch_size"] == 16


def test_reusing_runs_from_the_store_is_refused(space):
    reusing = parameters().model_copy(update={"single_measurement": True})
    assert "single_measurement to false" in (ZeusBso().check(reusing, space) or "")


def test_an_eta_other_than_the_one_the_experiment_prices_runs_with_is_refused(make_space):
    """The operator's cost limit, at its eta, stopped the runs the actuator priced at the
    experiment's: runs that should converge stopped short, and were retried."""
    priced = RUN.model_copy(update={"optional_properties": {"eta": 0.5}})
    entry = known_space(make_space(PROPERTIES, (priced,)))
    assert isinstance(entry, KnownSpace)

    assert ZeusBso().check(parameters(eta=0.5), entry) is None
    assert ZeusBso().check(parameters(eta=1.0), entry) == (
        "zeus_bso's eta 1 is not the 0.5 experiment 'train_to_target' prices its runs with: give "
        "the option eta: 0.5, or parameterize the experiment with eta: 1"
    )
    fixed = (*PROPERTIES, PropertySpec(name="eta", values=(0.7,)))  # the entity's value wins
    entry = known_space(make_space(fixed, (priced,)))
    assert isinstance(entry, KnownSpace)
    assert "is not the 0.7 experiment" in (ZeusBso().check(parameters(eta=0.5), entry) or "")


@pytest.mark.parametrize(
    "options",
    [{"num_pruning_rounds": 1, "mab_num_explorations": 1}, {"window_size": 1}],
)
def test_the_robust_posterior_without_an_arm_run_twice_is_refused(space, options):
    """No arm with two rewards: the pooled spread was 0, every posterior exact, and the bandit
    greedy for good, the pinned arm the robust posterior is there to remove."""
    assert ZeusBso().check(parameters(**options), space) == (
        "zeus_bso options: the robust posterior needs arms run twice: give num_pruning_rounds "
        "or mab_num_explorations of at least 2 and no window_size of 1, or posterior: zeus"
    )
    assert ZeusBso().check(parameters(**options, posterior="zeus"), space) is None


def test_a_space_without_recurrence_is_refused(make_space):
    entry = known_space(make_space(PROPERTIES[:3], (RUN,)))
    assert isinstance(entry, KnownSpace)
    assert "needs a 'recurrence' property" in (ZeusBso().check(parameters(), entry) or "")


def test_a_space_with_two_workloads_is_refused(make_space):
    two = (PropertySpec(name="dataset", values=("toy", "other")), *PROPERTIES[1:])
    entry = known_space(make_space(two, (RUN,)))
    assert isinstance(entry, KnownSpace)
    assert "'dataset' must have exactly one value" in (ZeusBso().check(parameters(), entry) or "")


@pytest.mark.parametrize(
    ("option", "value", "sentence"),
    [
        ("beta", "inf", "zeus_bso option 'beta': Input should be a finite number"),
        ("beta", 1e308, "zeus_bso option 'beta': Input should be less than or equal to 1000000"),
        ("prior_mean", "nan", "zeus_bso option 'prior_mean': Input should be a finite number"),
        ("max_power", 1e308, "zeus_bso option 'max_power': Input should be less than or equal"),
    ],
)
def test_an_option_no_decision_could_use_is_refused(space, option, value, sentence):
    """beta 1e308 made an infinite cost limit, which no request can carry; max_power 1e308
    overflowed the bandit; a NaN prior made every posterior mean NaN."""
    problem = ZeusBso().check(parameters(**{option: value}), space)
    assert problem is not None
    assert problem.startswith(sentence)


@pytest.mark.parametrize(
    ("recurrence", "missing"),
    [
        (PropertySpec(name="recurrence", values=(0, 1, 2)), 3),
        (PropertySpec(name="recurrence", values=(1, 2, 3, 4, 5, 6)), 0),
        (PropertySpec(name="recurrence", range=(0, 4), interval=1), 4),
        (PropertySpec(name="recurrence", range=(-3, 2), interval=1), 2),
        (PropertySpec(name="recurrence", range=(1, 100), interval=1), 0),
        (PropertySpec(name="recurrence", range=(0, 100), interval=2), 1),
        (PropertySpec(name="recurrence", range=(-5, -2), interval=1), 0),
    ],
)
def test_a_recurrence_domain_too_short_for_the_runs_is_refused(make_space, recurrence, missing):
    entry = known_space(make_space((*PROPERTIES[:3], recurrence), (RUN,)))
    assert isinstance(entry, KnownSpace)
    assert ZeusBso().check(parameters(), entry) == (
        "zeus_bso needs 'recurrence' to hold 0, 1, 2, ... up to at least 5 (one entity per run, "
        f"6 runs to converge, retries beyond): it does not hold {missing}"
    )


def test_a_space_whose_experiment_reports_no_run_is_refused(make_space):
    other = RUN.model_copy(update={"target_properties": ("time_to_accuracy", "loss")})
    entry = known_space(make_space(PROPERTIES, (other,)))
    assert isinstance(entry, KnownSpace)
    assert ZeusBso().check(parameters(), entry) == (
        "zeus_bso needs runs that report time_to_accuracy, energy_to_accuracy and converged: "
        "experiment 'train_to_target' does not measure energy_to_accuracy, converged"
    )


# -- propose -------------------------------------------------------------------------------


def test_the_first_run_profiles_power_at_the_default_batch_size(space):
    proposal = ZeusBso().propose(view(space))
    assert proposal == Measure((point(32, 200, 0),), ({"profile_power": 1, "max_power": 200.0},))


def test_the_next_run_carries_the_early_stopping_limit_and_the_profiled_limit(space):
    first = outcome(point(32, 200, 0), 1500.0, trained_power_limit=100)
    proposal = ZeusBso().propose(view(space, [first]))
    assert proposal == Measure(
        (point(16, 200, 1),), ({"cost_limit": 3000.0, "profile_power": 1, "max_power": 200.0},)
    )


def test_a_profiled_batch_size_runs_at_the_limit_profiling_chose(space):
    history = [
        outcome(point(32, 200, 0), 10.0, trained_power_limit=100),
        outcome(point(16, 200, 1), 12.0, trained_power_limit=200),
        outcome(point(8, 200, 2), 30.0, converged=False, trained_power_limit=200),
        outcome(point(64, 200, 3), 30.0, converged=False, trained_power_limit=100),
    ]
    proposal = ZeusBso().propose(view(space, history))
    assert proposal == Measure((point(32, 100, 4),), ({"cost_limit": 20.0, "max_power": 200.0},))


def test_max_epochs_is_passed_to_every_run(space):
    proposal = ZeusBso().propose(view(space, max_epochs=12))
    assert isinstance(proposal, Measure)
    assert proposal.inputs == ({"profile_power": 1, "max_power": 200.0, "max_epochs": 12},)


def test_free_slots_before_anything_converged_start_only_the_exploration(space):
    proposal = ZeusBso().propose(view(space, free=3))
    assert isinstance(proposal, Measure)
    assert [p["batch_size"] for p in proposal.points] == [32]


def test_concurrent_runs_get_the_cheapest_size_while_the_exploration_is_in_flight(space):
    first = outcome(point(32, 200, 0), 10.0, trained_power_limit=100)
    proposal = ZeusBso().propose(view(space, [first], free=3))
    assert isinstance(proposal, Measure)
    assert proposal.points == (point(16, 200, 1), point(32, 100, 2), point(32, 100, 3))


def test_the_exploration_waits_while_the_default_is_still_running(space):
    assert ZeusBso().propose(view(space, pending=[point(32, 200, 0)])) == Wait()


def test_the_operator_finishes_once_enough_recurrences_converged(space):
    history = [outcome(point(32, 200, k), 10.0 + k) for k in range(2)]
    finished = ZeusBso().propose(view(space, history, recurrences=2))
    assert finished == Finish("operator_finished", "2 recurrences converged")


def test_the_choice_is_the_bandits_best_survivor_with_the_costs_behind_it(space):
    """One pruning round walks 32, 16, 8 (never converges), then 64; the bandit then runs 16.
    Recurrences cost 10, 8, 5 + 12 (the run of 8 counts in the third) and 9."""
    runs = [
        outcome(point(32, 200, 0), 10.0),
        outcome(point(16, 100, 1), 8.0),
        outcome(point(8, 200, 2), 5.0, converged=False),
        outcome(point(64, 200, 3), 12.0),
        outcome(point(16, 100, 4), 9.0),
    ]

    choice = ZeusBso().choice(view(space, runs, num_pruning_rounds=1))

    assert choice == OperatorChoice(
        values={"batch_size": 16, "power_limit": 100},
        expected_cost=8.5,
        cost_so_far=44.0,
        recurrence_costs=(10.0, 8.0, 17.0, 9.0),
        recurrence_phases=("pruning", "pruning", "pruning", "bandit"),
    )


def test_before_anything_converged_the_choice_is_empty_but_the_cost_is_known(space):
    choice = ZeusBso().choice(view(space, [outcome(point(32, 200, 0), 7.0, converged=False)]))

    assert choice == OperatorChoice(values={}, cost_so_far=7.0)


def test_a_result_the_operator_cannot_read_leaves_no_choice_rather_than_failing(space):
    broken = PairResult("e", point(32, 200, 0), "train_to_target", True, {}, None, False)

    assert ZeusBso().choice(view(space, [broken])) is None


def test_an_invalid_result_counts_as_a_run_that_never_started():
    invalid = PairResult("e", point(64, 200, 3), "train_to_target", False, {}, "no row", False)
    attempt = attempt_of(invalid)
    assert not attempt.ran
    assert not attempt.converged


def test_a_result_without_the_run_figures_fails_with_a_clear_sentence():
    broken = PairResult(
        "e", point(32, 200, 0), "train_to_target", True, {"converged": 1}, None, False
    )
    with pytest.raises(ValueError, match="finite number 'time_to_accuracy'"):
        attempt_of(broken)


@pytest.mark.parametrize("energy", [True, float("inf"), float("nan"), "12.5"])
def test_a_run_figure_that_is_not_a_finite_number_fails_naming_it(energy):
    """A boolean, an infinite or NaN value, a string: not a value by the one rule for results."""
    values = {"time_to_accuracy": 1.0, "energy_to_accuracy": energy, "converged": 1}
    run = PairResult("e", point(32, 200, 0), "train_to_target", True, values, None, False)
    with pytest.raises(ValueError, match="finite number 'energy_to_accuracy'"):
        attempt_of(run)


# -- inside the engine ---------------------------------------------------------------------


def toy_job(values: dict[str, Any], experiment: str, attempt: int) -> tuple[str, Any]:
    """Smaller batches are cheaper down to 16; 8 never converges; every fourth run of 32 fails."""
    cost = {8: 40.0, 16: 20.0, 32: 25.0, 64: 30.0}[values["batch_size"]]
    converged = values["batch_size"] != 8 and not (
        values["batch_size"] == 32 and values["recurrence"] % 4 == 3
    )
    energy = 2 * cost * (1 + 0.01 * (values["recurrence"] % 3))
    return (
        "valid",
        {"time_to_accuracy": 0.0, "energy_to_accuracy": energy, "converged": int(converged)},
    )


def zeus_loop(loop, registered, make_request, **options: Any):
    sim = loop(registered, toy_job)
    sim.engine = Engine(OperatorRegistry([RandomWalk(), ZeusBso()]), sim.timing)
    request = make_request(
        registered,
        operator="zeus_bso",
        seed=5,
        single_measurement=False,
        options={**OPTIONS, **options},
    )
    return sim, request


def test_an_operation_runs_until_its_recurrences_converged(loop, registered, make_request):
    sim, request = zeus_loop(loop, registered, make_request, recurrences=12)
    sim.send(request)
    sim.run()
    completed = sim.decisions(OperationCompleted)
    assert len(completed) == 1
    assert completed[0].stop_reason == "operator_finished"
    assert completed[0].stop_detail.startswith("12 recurrences converged")
    runs = [p for r in sim.decisions() if getattr(r, "points", None) for p in r.points]
    assert [p["recurrence"] for p in runs] == list(range(len(runs)))
    assert [p["batch_size"] for p in runs[:3]] == [32, 16, 8]
    choice = completed[0].choice
    assert choice is not None
    assert choice.values == {"batch_size": 16, "power_limit": 200}
    assert len(choice.recurrence_costs) == 12
    assert (choice.recurrence_phases[0], choice.recurrence_phases[-1]) == ("pruning", "bandit")
    assert choice.cost_so_far == pytest.approx(sum(choice.recurrence_costs))


def test_a_restarted_explorer_makes_the_same_decisions(loop, registered, make_request):
    sim, request = zeus_loop(loop, registered, make_request, recurrences=10)
    sim.send(request)
    for _ in range(25):
        sim.step()
    sim.crash()
    sim.restart()
    sim.run()
    replayed = [r for r in sim.decisions() if getattr(r, "points", None)]

    again, request = zeus_loop(loop, registered, make_request, recurrences=10)
    again.send(request)
    again.run()
    straight = [r for r in again.decisions() if getattr(r, "points", None)]
    assert [r.points for r in replayed] == [r.points for r in straight]


def test_a_job_whose_sizes_never_converge_fails_with_the_pruning_sentence(
    loop, registered, make_request
):
    sim, request = zeus_loop(loop, registered, make_request)
    sim.behaviour = sim.fakes.behaviour = lambda values, experiment, attempt: (
        "valid",
        {"time_to_accuracy": 1.0, "energy_to_accuracy": 1.0, "converged": 0},
    )
    sim.send(request)
    sim.run()
    failed = sim.decisions(OperationFailed)
    assert len(failed) == 1
    assert "no batch size reached the target metric" in failed[0].reason


@pytest.mark.parametrize("retryable", [False, True])
def test_a_job_whose_runs_keep_failing_for_good_gives_up_saying_so(
    loop, registered, make_request, retryable: bool
):
    """A failure tells the policy nothing: the job planned run after run, 10,000 of them (one
    per recurrence of the space), then failed on a recurrence out of its domain."""
    sim, request = zeus_loop(loop, registered, make_request)
    sim.behaviour = sim.fakes.behaviour = lambda values, experiment, attempt: ("fail", retryable)
    sim.send(request.model_copy(update={"parameters": request.parameters.model_copy(
        update={"max_retries": 1})}))  # fmt: skip
    sim.run()

    [failed] = sim.decisions(OperationFailed)
    assert failed.reason == (
        f"operator 'zeus_bso' failed: {MAX_FAILED_RUNS} of its {MAX_FAILED_RUNS} entities failed "
        "for good, without a result: the measurements keep failing (their reasons say why)"
    )
    runs = {
        p["recurrence"] for r in sim.decisions() if getattr(r, "points", None) for p in r.points
    }
    assert len(runs) == MAX_FAILED_RUNS


def test_a_job_out_of_recurrence_values_ends_saying_to_widen_them(loop, make_space, make_request):
    """Accepted at start (0 to recurrences - 1), the job failed on the engine's domain error
    once a run did not converge: "property 'recurrence' has the value 6, which is not in its
    domain"."""
    short = (*PROPERTIES[:3], PropertySpec(name="recurrence", range=(0, 6), interval=1))
    registered = make_space(short, (RUN,))
    sim, request = zeus_loop(loop, registered, make_request)  # 8 never converges
    sim.send(request)
    sim.run()

    [failed] = sim.decisions(OperationFailed)
    assert failed.reason.startswith("operator 'zeus_bso' failed: 'recurrence' holds no value ")
    assert failed.reason.endswith(
        "for run 6: 5 of 6 recurrences converged in 6 runs, and the runs that do not converge "
        "need values beyond 5; widen its range"
    )


def test_the_engine_refuses_an_operation_without_a_default_batch_size(
    loop, registered, make_request
):
    sim, _ = zeus_loop(loop, registered, make_request)
    request = make_request(registered, operator="zeus_bso", single_measurement=False)
    sim.send(request)
    failed = sim.decisions(OperationFailed)
    assert failed
    assert "default_batch_size" in failed[0].reason


def test_the_operator_keeps_the_folds_of_a_bounded_number_of_operations(space):
    """Operations a stopping rule or a cancel ended are never finished by the operator: their
    folds must not pile up for the life of the process."""
    from discospace.explorer.operators.zeus.operator import OPERATIONS_KEPT

    operator = ZeusBso()
    for number in range(OPERATIONS_KEPT + 10):
        operator.propose(replace(view(space), operation_id=f"op-{number}"))

    assert len(operator._read) == OPERATIONS_KEPT
    assert "op-0" not in operator._read
    assert f"op-{OPERATIONS_KEPT + 9}" in operator._read


def test_runs_elsewhere_read_after_the_start_are_used_as_a_restarted_explorer_uses_them(
    loop, make_space, make_request
):
    """Another GPU's runs of the workload, measured before the operation started but read
    after its first decision: the explorer that stayed up kept the runs elsewhere it read first
    (none) and decided cold, a restarted one (new operators, as a new process) decided warm."""
    from datetime import timedelta

    from discospace.core import parameterized_experiment_id
    from discospace.testing.events import measured

    from .conftest import T0

    a40 = (PropertySpec(name="gpu_model", values=("a40",)), *PROPERTIES)
    registered = make_space(a40, (RUN,))
    experiment = parameterized_experiment_id("train_to_target", {})
    runs = [(64, 600.0, 12), (64, 610.0, 12), (32, 1000.0, 10), (16, 1600.0, 8)]
    late = [
        measured(
            {
                "dataset": "toy",
                "gpu_model": "v100",
                "batch_size": size,
                "power_limit": 250,
                "recurrence": 0,
            },
            T0 - timedelta(seconds=60),
            index,
            operation="op-before",
            experiment_id=experiment,
            sample_store=registered.spec.sample_store,
            results={
                "time_to_accuracy": 0.0,
                "energy_to_accuracy": 2 * cost,
                "converged": 1,
                "target_epoch": epochs,
            },
        )
        for index, (size, cost, epochs) in enumerate(runs)
    ]

    def started() -> Any:
        sim, request = zeus_loop(loop, registered, make_request, recurrences=8)
        sim.send(request)
        sim.step()  # the first run: nothing read elsewhere yet
        for event in late:
            sim.send(event)
        return sim

    def points(sim: Any) -> list[Any]:
        return [r.points for r in sim.decisions() if getattr(r, "points", None)]

    live = started()
    live.run()
    restarted = started()
    restarted.step()
    restarted.step()
    restarted.crash()
    restarted.engine = Engine(OperatorRegistry([RandomWalk(), ZeusBso()]), restarted.timing)
    restarted.restart()
    restarted.run()
    assert points(live) == points(restarted)


def test_a_run_profiled_when_its_request_asked_it_to_whatever_its_result_names():
    """The replay actuator names the limit it trained at on every run: every run read as
    profiled, so a job through the services never counted a size's epoch cost as measured
    without profiling, and a warm job decided otherwise than in process."""
    values = {"time_to_accuracy": 1.0, "energy_to_accuracy": 2.0, "converged": 1}
    run = PairResult(
        "e", point(32, 200, 3), "train_to_target", True, {**values, "trained_power_limit": 200},
        None, False,
    )  # fmt: skip

    assert attempt_of(run, {"max_power": 200.0}).profiled is False
    assert attempt_of(run, {"profile_power": 1, "max_power": 200.0}).profiled is True
    assert attempt_of(run).profiled is True  # a view without its requests: as its result says


def test_the_engine_tells_the_operator_what_each_run_was_asked(loop, registered, make_request):
    seen: list[tuple[int, Any]] = []

    class Watching(ZeusBso):
        def propose(self, view):
            seen.extend(
                (o.entity_values["recurrence"], view.request_controls(o.entity_id, o.experiment_id))
                for o in view.outcomes
            )
            return super().propose(view)

    sim = loop(registered, toy_job)
    sim.engine = Engine(OperatorRegistry([RandomWalk(), Watching()]), sim.timing)
    sim.send(
        make_request(
            registered, operator="zeus_bso", seed=5, single_measurement=False,
            options={**OPTIONS, "recurrences": 6},
        )
    )  # fmt: skip
    sim.run()

    asked = dict(seen)
    assert asked[0] == {"profile_power": 1, "max_power": 200.0}  # the default size's first run
    assert None not in asked.values()
    assert any("profile_power" not in controls for controls in asked.values())
