"""`zeus_bso` end to end: the Zeus batch-size optimizer through every service, on replayed runs.

Every service runs as a process on the real broker; a replay worker serves `train_to_target`
from the Zeus NSDI'23 V100 traces (`examples/replay/zeus-v100.yaml`, skipped, saying where it
looked, when `../shared/data` is absent). The operation is `examples/replay/zeus-bso.yaml` on
`examples/replay/zeus-bso-space.yaml` (CIFAR-100 / ShuffleNet-v2), with few recurrences.

One run at a time makes the operation deterministic, so the services must give exactly the runs
of the benchmark's in-process simulator (`discospace.bench.zeus_sim`) when it draws each run as
the replay does (from the request id): the same decisions, early stops and power profiling, in
order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import yaml

from discospace.actuator.replay.seeding import generator
from discospace.bench.zeus_sim import RunDraw, Simulator, simulate_operator
from discospace.client import Client
from discospace.client.models import OperationResult
from discospace.core import Entity
from discospace.events import MeasurementRequested
from discospace.events.common import PropertyValues
from discospace.events.measurements import measurement_request_id
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.operators.zeus.operator import attempt_of
from discospace.explorer.operators.zeus.policy import (
    Attempt,
    ZeusSettings,
    read_history,
    recommendation,
    summary,
)
from discospace.explorer.operators.zeus.pruning import Pruned, pruning_state
from discospace.testing.loop import REPO, Loop
from discospace.traces.data import TraceDataMissingError, data_dir
from discospace.traces.zeus import Workload, ZeusTrace
from discospace.traces.zeus_rules import LimitProfile

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "examples" / "replay"
WORKLOAD = Workload("cifar100", "shufflenetv2")
GPU = {"gpu_model": "v100"}
EXPERIMENT = "train_to_target"
RECURRENCES = 10
SEED = 0
"""The operation's seed. Which training run each run draws depends on the request id, hence on
the (random) operation id: over 200 operation ids, the 10 recurrences took 12 to 14 runs, 2 to 4
of them stopped early, and pruning always ended."""


@pytest.fixture(scope="module")
def trace() -> ZeusTrace:
    try:
        folder = data_dir()
    except TraceDataMissingError as error:
        pytest.skip(str(error))
    return ZeusTrace.load(folder, "v100")


@pytest.fixture(scope="module")
def loop(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, trace: ZeusTrace
) -> Iterator[Loop]:
    running = Loop(kafka_bootstrap, tmp_path_factory.mktemp("zeus-loop"))
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator(
            "replay-v100",
            "v100",
            {"config": str(EXAMPLES / "zeus-v100.yaml")},
            DISCOSPACE_ACTUATOR_ACTUATOR="replay",
            DISCOSPACE_ACTUATOR_GPU_MODEL="v100",
        )
        running.wait_healthy()
        running.wait_for_catalog({EXPERIMENT})
        yield running
    finally:
        running.stop()


def run_operation(loop: Loop) -> str:
    """`zeus-bso.yaml` with a few recurrences on `zeus-bso-space.yaml`: its operation id."""
    space_id = loop.cli_ok("space", "create", "-f", str(EXAMPLES / "zeus-bso-space.yaml"))
    operation = yaml.safe_load((EXAMPLES / "zeus-bso.yaml").read_text())
    operation["parameters"]["seed"] = SEED
    operation["parameters"]["options"]["recurrences"] = RECURRENCES
    path = loop.workdir / "zeus-bso.yaml"
    path.write_text(yaml.safe_dump(operation))
    output = loop.cli_ok("operation", "create", "-f", str(path), "--space", space_id.strip())
    return output.strip().splitlines()[0]


def results_of(loop: Loop, operation_id: str) -> list[OperationResult]:
    """The operation's runs as the projector serves them, oldest first."""
    with Client(loop.projector_url) as client:
        return client.operation_results(operation_id)


def attempt(result: OperationResult) -> Attempt:
    """One run as `zeus_bso` reads it."""
    values, entity = result.values, result.entity_values
    return attempt_of(
        PairResult(
            result.entity_id, entity, result.experiment_id, result.is_valid, values, None, False
        )
    )


def run_of(attempt: Attempt) -> tuple[Any, ...]:
    """What a run did (`profiled` aside: the replay reports the trained limit of every run)."""
    return (
        attempt.batch_size,
        attempt.power_limit,
        pytest.approx(attempt.time_s, rel=1e-12),
        pytest.approx(attempt.energy_j, rel=1e-12),
        attempt.converged,
    )


def replay_draw(operation_id: str) -> RunDraw:
    """The training run the replay worker draws for a point of this operation (its request's
    first attempt, with the config's seed)."""
    seed = int(yaml.safe_load((EXAMPLES / "zeus-v100.yaml").read_text())["seed"])

    def draw(point: PropertyValues, _runs_before: int) -> np.random.Generator:
        entity = Entity.of({**point, **GPU})
        request = measurement_request_id(operation_id, entity.id, EXPERIMENT)
        return generator(seed, EXPERIMENT, request, 1)

    return draw


def epoch_cost(trace: ZeusTrace, batch_size: int, power_limit: int, eta: float) -> float:
    seconds = trace.time_per_epoch(WORKLOAD, batch_size, power_limit)
    watts = trace.average_power(WORKLOAD, batch_size, power_limit)
    return LimitProfile(power_limit, seconds, watts).epoch_cost(eta, trace.max_power(WORKLOAD))


def test_zeus_bso_through_the_services_stops_runs_early_profiles_limits_and_recommends_a_survivor(
    loop: Loop, trace: ZeusTrace
) -> None:
    settings = ZeusSettings(eta=0.5)
    sim = Simulator(trace, WORKLOAD, settings)

    operation_id = run_operation(loop)
    progress = loop.wait_for_end(operation_id, timeout_s=120)
    results = results_of(loop, operation_id)
    requests = loop.events(loop.topics.measure("v100"), operation_id)
    controls = {
        e.entity_id: dict(e.inputs) for e in requests if isinstance(e, MeasurementRequested)
    }
    attempts = [attempt(r) for r in results]
    expected = simulate_operator(sim, SEED, RECURRENCES, draw=replay_draw(operation_id))

    assert progress["status"] == "completed", progress
    assert progress["stop_reason"] == "operator_finished"
    assert [run_of(a) for a in expected] == [run_of(a) for a in attempts]
    assert sum(a.converged for a in attempts) == RECURRENCES
    assert_early_stops_keep_under_beta_times_the_cheapest_recurrence(
        results, controls, trace, settings
    )
    assert_first_runs_profiled_the_power_limits(results, controls)
    assert_the_recommendation_is_a_survivor(attempts, sim, settings)
    assert_the_choice_is_shown_and_plotted(loop, operation_id, progress, attempts, sim, settings)


def assert_early_stops_keep_under_beta_times_the_cheapest_recurrence(
    results: list[OperationResult],
    controls: dict[str, dict[str, Any]],
    trace: ZeusTrace,
    settings: ZeusSettings,
) -> None:
    """Every unconverged run was stopped by its cost limit, `beta * min cost` of the recurrences
    before it: it trained the epochs that limit affords at the limit it trained at, no more."""
    max_epochs = trace.job(WORKLOAD).max_epochs
    min_cost, running, stopped = float("inf"), 0.0, 0
    for result in results:
        values, inputs = result.values, controls[result.entity_id]
        cost = float(values["zeus_cost"])
        if not values["converged"]:
            stopped += 1
            assert inputs["cost_limit"] == pytest.approx(settings.beta * min_cost)
            per_epoch = epoch_cost(
                trace,
                int(result.entity_values["batch_size"]),
                int(values["trained_power_limit"]),
                settings.eta,
            )
            epochs = float(values["target_epoch"])
            assert epochs < max_epochs
            assert epochs * per_epoch <= inputs["cost_limit"] < (epochs + 1) * per_epoch
            if "profile_power" not in inputs:
                assert cost <= settings.beta * min_cost
        running += cost
        if values["converged"]:
            min_cost, running = min(min_cost, running), 0.0
    assert stopped >= 1, "every one of 200 simulated operations stopped 2 to 4 runs early"


def assert_first_runs_profiled_the_power_limits(
    results: list[OperationResult], controls: dict[str, dict[str, Any]]
) -> None:
    """A batch size's first run profiles (requested at the highest limit); later ones train at
    the limit it chose."""
    chosen: dict[int, int] = {}
    for result in results:
        batch_size = int(result.entity_values["batch_size"])
        trained = int(result.values["trained_power_limit"])
        first = batch_size not in chosen
        assert (controls[result.entity_id].get("profile_power") == 1) == first
        if first:
            assert result.entity_values["power_limit"] == 250
        assert chosen.setdefault(batch_size, trained) == trained
        assert result.entity_values["power_limit"] in (250, trained)
    assert any(limit < 250 for limit in chosen.values())


def assert_the_recommendation_is_a_survivor(
    attempts: list[Attempt], sim: Simulator, settings: ZeusSettings
) -> None:
    history = read_history(attempts, settings, sim.job)
    state = pruning_state(
        sim.job.batch_sizes,
        sim.job.default_batch_size,
        settings.num_pruning_rounds,
        history.observations,
    )
    choice = recommendation(settings, sim.job, history)

    assert isinstance(state, Pruned)
    assert choice is not None
    assert choice.batch_size in state.survivors
    assert choice.power_limit == history.limits[choice.batch_size]


def assert_the_choice_is_shown_and_plotted(
    loop: Loop,
    operation_id: str,
    progress: dict[str, Any],
    attempts: list[Attempt],
    sim: Simulator,
    settings: ZeusSettings,
) -> None:
    """The projector and the CLI show the recommendation, its expected cost and the cost so
    far; the plot draws the cost per recurrence."""
    told = summary(settings, sim.job, read_history(attempts, settings, sim.job))
    choice = progress["choice"]
    shown = loop.cli_ok("operation", "show", operation_id)
    plot = loop.cli_ok("operation", "plot", operation_id, "-o", str(loop.workdir / "zeus.png"))

    assert told.choice is not None
    assert choice["values"] == {
        "batch_size": told.choice.batch_size,
        "power_limit": told.choice.power_limit,
    }
    assert choice["cost_so_far"] == pytest.approx(told.cost_so_far)
    assert choice["expected_cost"] == pytest.approx(told.expected_cost)
    assert choice["recurrence_costs"] == pytest.approx(list(told.recurrence_costs))
    assert len(choice["recurrence_costs"]) == RECURRENCES
    assert choice["recurrence_phases"] == list(told.recurrence_phases)
    assert choice["recurrence_phases"][0] == "pruning"
    assert "choice.batch_size" in shown
    assert str(told.choice.batch_size) in shown
    assert (loop.workdir / "zeus.png").read_bytes().startswith(b"\x89PNG"), plot


def test_the_example_space_is_the_traces_job(trace: ZeusTrace) -> None:
    spec = yaml.safe_load((EXAMPLES / "zeus-bso-space.yaml").read_text())
    values = {p["name"]: p.get("values") for p in spec["entity_space"]}
    job = trace.job(WORKLOAD)
    operation = yaml.safe_load((EXAMPLES / "zeus-bso.yaml").read_text())

    assert tuple(values["batch_size"]) == job.batch_sizes
    assert tuple(values["power_limit"]) == job.power_limits
    assert operation["parameters"]["options"]["default_batch_size"] == job.default_batch_size
