"""The robust `zeus_bso` (the default posterior) through every service gives the decisions it
gives in process for the same seed.

Every service runs as a process on the real broker; a replay worker serves `train_to_target`
from the Zeus NSDI'23 V100 traces (`examples/replay/zeus-v100.yaml`; skipped, saying where it
looked, when `../shared/data` is absent). The operation is `examples/replay/zeus-bso.yaml` with
`posterior: robust` set explicitly and enough recurrences for the bandit to take over from
pruning, one run at a time. The in-process job (`discospace.bench.zeus_sim.simulate_operator`)
draws each run's training run as the replay worker does (from the request id), so the two must
make the same decisions: the same batch sizes, power limits, early stops, in the same order,
and the same final choice.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from discospace.actuator.replay.seeding import generator
from discospace.bench.zeus_sim import RunDraw, Simulator, simulate_operator
from discospace.client import Client
from discospace.core import Entity
from discospace.events.common import PropertyValues
from discospace.events.measurements import measurement_request_id
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.operators.zeus.operator import attempt_of
from discospace.explorer.operators.zeus.policy import (
    ZeusSettings,
    pruning_over_at,
    read_history,
    summary,
)
from discospace.testing.loop import Loop
from discospace.traces.zeus import Workload, ZeusTrace

from . import test_zeus_loop as zeus_loop

pytestmark = pytest.mark.integration

# test_zeus_loop's fixtures: the broker, every service and a V100 replay worker; the V100 trace
# (skipped, saying where it looked, without it).
loop, trace = zeus_loop.loop, zeus_loop.trace
EXAMPLES, EXPERIMENT = zeus_loop.EXAMPLES, zeus_loop.EXPERIMENT

WORKLOAD = Workload("cifar100", "shufflenetv2")
RECURRENCES = 24
SEED = 7


def robust_operation(loop: Loop) -> str:
    """`zeus-bso.yaml` with the robust posterior named and `RECURRENCES`: its operation id."""
    space_id = loop.cli_ok("space", "create", "-f", str(EXAMPLES / "zeus-bso-space.yaml"))
    operation = yaml.safe_load((EXAMPLES / "zeus-bso.yaml").read_text())
    operation["parameters"]["seed"] = SEED
    operation["parameters"]["options"].update(recurrences=RECURRENCES, posterior="robust")
    path = loop.workdir / "zeus-bso-robust.yaml"
    path.write_text(yaml.safe_dump(operation))
    output = loop.cli_ok("operation", "create", "-f", str(path), "--space", space_id.strip())
    return output.strip().splitlines()[0]


def replay_draw(operation_id: str) -> RunDraw:
    """The training run the replay worker draws for a point of this operation."""
    seed = int(yaml.safe_load((EXAMPLES / "zeus-v100.yaml").read_text())["seed"])

    def draw(point: PropertyValues, _runs_before: int) -> np.random.Generator:
        entity = Entity.of({**point, "gpu_model": "v100"})
        request = measurement_request_id(operation_id, entity.id, EXPERIMENT)
        return generator(seed, EXPERIMENT, request, 1)

    return draw


def test_a_robust_zeus_bso_job_decides_through_the_services_as_in_process(
    loop: Loop, trace: ZeusTrace
) -> None:
    settings = ZeusSettings(eta=0.5, posterior="robust")
    sim = Simulator(trace, WORKLOAD, settings)

    operation_id = robust_operation(loop)
    progress = loop.wait_for_end(operation_id, timeout_s=240)
    with Client(loop.projector_url) as client:
        results = client.operation_results(operation_id)
    served = [
        attempt_of(
            PairResult(
                r.entity_id, r.entity_values, r.experiment_id, r.is_valid, r.values, None, False
            )
        )
        for r in results
    ]
    expected = simulate_operator(sim, SEED, RECURRENCES, draw=replay_draw(operation_id))

    assert progress["status"] == "completed", progress
    decisions = [(a.batch_size, a.power_limit, a.converged) for a in expected]
    assert [(a.batch_size, a.power_limit, a.converged) for a in served] == decisions
    assert [a.time_s for a in served] == pytest.approx([a.time_s for a in expected], rel=1e-12)
    history = read_history(expected, settings, sim.job)
    assert pruning_over_at(settings, sim.job, history.observations) < len(expected), (
        "the bandit (where the posteriors differ) took over before the end"
    )
    told = summary(settings, sim.job, history)
    assert told.choice is not None
    assert progress["choice"]["values"] == {
        "batch_size": told.choice.batch_size,
        "power_limit": told.choice.power_limit,
    }
