"""`zeus_bso` warm from runs of the same workload on another GPU (`store_elsewhere`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from discospace.core import ExperimentSpec, PropertySpec
from discospace.events import OperationParameters
from discospace.explorer.domain.operator import Measure, OperationView
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.explorer.operators.zeus.operator import ZeusBso
from discospace.explorer.operators.zeus.policy import (
    Attempt,
    Job,
    ZeusSettings,
    arm_posteriors,
    read_history,
)
from discospace.explorer.operators.zeus.warm import ElsewhereRun, elsewhere_of

RUN = ExperimentSpec(
    actuator="replay",
    experiment="train_to_target",
    target_properties=("time_to_accuracy", "energy_to_accuracy", "converged"),
    required_properties=("dataset", "batch_size", "power_limit"),
)
PROPERTIES = (
    PropertySpec(name="dataset", values=("toy",)),
    PropertySpec(name="gpu_model", values=("a40",)),
    PropertySpec(name="batch_size", values=(8, 16, 32, 64, 128)),
    PropertySpec(name="power_limit", values=(100, 200)),
    PropertySpec(name="recurrence", range=(0, 10_000), interval=1),
)


T0 = datetime(2026, 11, 23, 17, 0, tzinfo=UTC)


def view(space: KnownSpace, store: tuple[PairResult, ...], **options: Any) -> OperationView:
    """A new operation (nothing run yet) with `store` as the store's results elsewhere."""
    parameters = OperationParameters(
        seed=3, single_measurement=False, options={"recurrences": 6, **options}
    )
    return OperationView(
        operation_id="op-1",
        parameters=parameters,
        space=space,
        started_at=T0,
        now=T0,
        free_slots=1,
        in_flight=0,
        drawn_by_strategy=0,
        entities_drawn=0,
        exhausted=False,
        entities={},
        outcomes=(),
        best=None,
        store_elsewhere=store,
    )


@pytest.fixture
def space(make_space) -> KnownSpace:
    entry = known_space(make_space(PROPERTIES, (RUN,)))
    assert isinstance(entry, KnownSpace)
    return entry


def run_elsewhere(
    batch_size: int, epochs: float, converged: bool, cost: float, **entity: Any
) -> PairResult:
    """A run on V100 of `epochs` epochs costing `cost` (eta 0.5: energy 2 * cost, no time)."""
    values = {"dataset": "toy", "gpu_model": "v100", **entity}
    point = {**values, "batch_size": batch_size, "power_limit": 250, "recurrence": 0}
    result = {
        "time_to_accuracy": 0.0,
        "energy_to_accuracy": 2 * cost,
        "converged": int(converged),
        "target_epoch": epochs,
    }
    entity_id = f"v100-{batch_size}-{epochs}-{cost}"
    return PairResult(entity_id, point, "train_to_target", True, result, None, False)


STORE = (
    run_elsewhere(32, 10, True, 1000.0),
    run_elsewhere(16, 8, True, 1600.0),
    run_elsewhere(64, 12, True, 600.0),
    run_elsewhere(64, 12, True, 600.0),
    run_elsewhere(128, 30, False, 1500.0),
)
"""64 is cheapest there (50 per epoch, 12 epochs); 128 never converged there; 8 never ran."""


def first_request(space: KnownSpace, store=STORE, **options: Any) -> Measure:
    proposal = ZeusBso().propose(view(space, store, default_batch_size=32, **options))
    assert isinstance(proposal, Measure)
    return proposal


def test_a_warm_job_starts_at_the_batch_size_cheapest_on_the_other_gpu(space):
    proposal = first_request(space)
    assert proposal.points[0]["batch_size"] == 64
    assert proposal.points[0]["gpu_model"] == "a40"
    assert proposal.inputs[0]["profile_power"] == 1


def test_a_cold_job_walks_from_the_default_batch_size(space):
    assert first_request(space, store=()).points[0]["batch_size"] == 32
    assert first_request(space, warm_start=False).points[0]["batch_size"] == 32


def test_runs_of_another_workload_are_not_used(space):
    other = tuple(replace(r, entity_values={**r.entity_values, "dataset": "imdb"}) for r in STORE)
    assert first_request(space, store=other).points[0]["batch_size"] == 32


def test_runs_naming_their_workload_in_a_property_this_space_lacks_are_not_used(space):
    """Only the space's own fixed values were compared: runs of `network: resnet152` were
    used as this job's runs on another GPU (it skipped pruning at their cheapest size)."""
    extra = tuple(
        replace(r, entity_values={**r.entity_values, "network": "resnet152"}) for r in STORE
    )
    assert first_request(space, store=extra).points[0]["batch_size"] == 32


def test_the_properties_that_may_differ_are_an_option(space):
    assert first_request(space, shared_across=[]).points[0]["batch_size"] == 32


def test_a_job_none_of_whose_sizes_the_runs_elsewhere_leave_in_starts_cold(make_space):
    """There 8 converged and 16 did not: every size of this job lies beyond that failure. The
    warm job had no arm at all ("the bandit has no arm to choose from"); cold, it runs."""
    sizes = PropertySpec(name="batch_size", values=(32, 64, 128))
    entry = known_space(make_space((*PROPERTIES[:2], sizes, *PROPERTIES[3:]), (RUN,)))
    assert isinstance(entry, KnownSpace)
    store = (run_elsewhere(8, 5, True, 100.0), run_elsewhere(16, 9, False, 300.0))

    assert first_request(entry, store=store).points[0]["batch_size"] == 32


def test_what_transfers_is_epochs_by_batch_size_and_what_converged():
    runs = [
        ElsewhereRun(32, 10, True, 1000.0),
        ElsewhereRun(32, 3, False, 300.0),
        ElsewhereRun(128, 30, False, 1500.0),
        ElsewhereRun(8, 0, False, 0.0),
    ]
    elsewhere = elsewhere_of(runs)
    assert elsewhere.epochs == {32: (10,)}
    assert elsewhere.converged == {32}
    assert elsewhere.tried == {32, 128}
    assert elsewhere.epoch_costs == {32: 100.0, 128: 50.0}
    # 64 lies between sizes tried there (that job had none); 8 and 16 lie below 32, which
    # converged there; 128 failed there and 256 lies beyond that failure.
    assert elsewhere.arms((8, 16, 32, 64, 128, 256)) == (8, 16, 32, 64)


def test_sizes_beyond_a_failure_there_are_left_out():
    elsewhere = elsewhere_of([ElsewhereRun(32, 10, True, 1000.0), ElsewhereRun(16, 9, False, 1.0)])
    assert elsewhere.arms((8, 16, 32, 64)) == (32, 64)


def test_epoch_costs_here_are_measured_and_guessed_from_the_median_ratio():
    elsewhere = elsewhere_of(
        [ElsewhereRun(32, 10, True, 1000.0), ElsewhereRun(64, 10, True, 600.0)]
    )
    assert elsewhere.guessed_epoch_costs({}) == {}
    assert elsewhere.guessed_epoch_costs({32: 200.0}) == {32: 200.0, 64: 120.0}
    assert elsewhere.pseudo_rewards(64, 120.0) == (-1200.0,)


def test_a_warm_jobs_recommendation_reads_the_rewards_the_bandit_chooses_with():
    """The recommendation read every run elsewhere at the measured epoch cost, where the
    bandit counts them once at their mean epochs while only a profiling run measured the arm:
    it named 64 (550) where the bandit's best was 32 (534)."""
    from discospace.explorer.operators.zeus.policy import (
        Attempt,
        Choice,
        Job,
        ZeusSettings,
        read_history,
        summary,
    )
    from discospace.explorer.operators.zeus.warm import Elsewhere

    elsewhere = Elsewhere(
        epochs={32: (4,) * 9 + (13,), 64: (5, 6)},
        converged=frozenset({32, 64}),
        tried=frozenset({32, 64}),
    )
    job = Job((32, 64), 32, (100, 200), 200.0, elsewhere)
    settings = ZeusSettings(posterior="zeus")
    runs = [  # cost 0.5 x energy: 32 profiled once; 64 profiled, then not
        Attempt(32, 200, 0.0, 960.0, True, profiled=True, epochs=4),
        Attempt(64, 200, 0.0, 1200.0, True, profiled=True, epochs=5),
        Attempt(64, 200, 0.0, 1000.0, True, profiled=False, epochs=5),
    ]
    told = summary(settings, job, read_history(runs, settings, job))
    assert (told.choice, told.expected_cost) == (Choice(32, 200), 534.0)


def test_a_warm_job_whose_runs_report_no_epochs_exploits_what_it_measured():
    """An arm counted as run here only once its epoch cost was known: runs reporting no
    `target_epoch` left every arm "not run yet", and the bandit pulled them at random."""
    from collections import Counter

    from discospace.explorer.operators.zeus.policy import (
        Attempt,
        Job,
        ZeusSettings,
        decision_rng,
        next_plan,
        read_history,
    )
    from discospace.explorer.operators.zeus.warm import Elsewhere

    elsewhere = Elsewhere(
        epochs={32: (4.0, 4.0, 5.0), 64: (4.0, 5.0, 4.0)},
        converged=frozenset({32, 64}),
        tried=frozenset({32, 64}),
        epoch_costs={32: 100.0, 64: 110.0},
    )
    job = Job((32, 64), 32, (100, 200), 200.0, elsewhere)
    settings = ZeusSettings()
    runs = [Attempt(b, 200, 0.0, energy + i, True) for i in range(30) for b, energy in
            ((32, 800.0), (64, 960.0))]  # fmt: skip
    history = read_history(runs, settings, job)
    picks = Counter(
        plan.batch_size
        for d in range(200)
        if (plan := next_plan(settings, job, history, (), decision_rng(1, d))) is not None
    )
    assert picks == {32: 200}


def test_a_window_on_a_warm_job_keeps_its_own_most_recent_runs():
    """The other GPU's runs came after the job's own: a window of 3 kept only those (32 at
    1000, where it measured 3000 here ten times) and the bandit chose 32 every time."""
    attempts = [_run(32, 3000) for _ in range(10)] + [_run(64, 2000) for _ in range(10)]
    posteriors = _windowed_posteriors(attempts)

    assert -posteriors[32].mean == pytest.approx(3000)
    assert -posteriors[64].mean == pytest.approx(2000)


def test_a_warm_job_whose_every_offered_size_failed_here_walks_cold(make_space):
    """There the default size (32) did not converge and 64 always did; here 64 runs out of
    memory: the warm bandit kept its only arm and ran it 20 times in a row, failing the job,
    where the job run cold finishes (at 32)."""
    sizes = PropertySpec(name="batch_size", values=(32, 64))
    space = known_space(make_space((*PROPERTIES[:2], sizes, *PROPERTIES[3:]), (RUN,)))
    assert isinstance(space, KnownSpace)
    store = (
        run_elsewhere(32, 100, False, 5000.0),
        run_elsewhere(64, 12, True, 600.0),
        run_elsewhere(64, 12, True, 600.0),
    )
    point = {"dataset": "toy", "gpu_model": "a40", "batch_size": 64, "power_limit": 200}
    failed = PairResult(
        "a40-64-0", {**point, "recurrence": 0}, "train_to_target", False, {}, "out of memory",
        False,
    )  # fmt: skip
    first = view(space, store, default_batch_size=32)
    after = replace(first, entities={"a40-64-0": failed.entity_values}, outcomes=(failed,))

    assert first_request(space, store=store).points[0]["batch_size"] == 64
    proposal = ZeusBso().propose(after)
    assert isinstance(proposal, Measure)
    assert proposal.points[0]["batch_size"] == 32  # the cold walk, from the default size


def test_a_window_on_a_warm_arm_that_failed_first_keeps_its_own_runs_in_the_recommendation():
    """An arm that failed its first run here is left out of the bandit's rewards and read by
    the recommendation's fallback, which still listed its own runs before the other GPU's: a
    window kept only those (32 at 1000) and the choice was 32."""
    attempts = [_run(32, 3000, converged=False)] + [_run(32, 3000) for _ in range(10)]
    attempts += [_run(64, 2000) for _ in range(10)]
    posteriors = _windowed_posteriors(attempts)

    assert -posteriors[32].mean == pytest.approx(3000)


def _run(batch_size: int, cost: float, converged: bool = True) -> Attempt:
    """A run here at 200 W, without profiling, of `cost` at 100 an epoch (eta 0.5)."""
    return Attempt(batch_size, 200, 0.0, 2 * cost, converged, profiled=False, epochs=cost / 100)


def _windowed_posteriors(attempts: list[Attempt]) -> dict[int, Any]:
    """The robust posteriors, with a window of 3, of a job of sizes 32 and 64 that both ran 5
    times on the other GPU, 10 epochs at 1000."""
    there = [ElsewhereRun(b, 10.0, True, 1000.0) for b in (32, 64) for _ in range(5)]
    job = Job((32, 64), 32, (100, 200), 200.0, elsewhere_of(there))
    settings = ZeusSettings(posterior="robust", window_size=3)
    return arm_posteriors(settings, job, read_history(attempts, settings, job), (32, 64))
