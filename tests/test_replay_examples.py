"""The README's optimizer example on the replayed fms table searches only the recorded runs.

The fms space holds every combination of the table's values (588), of which the table recorded
124: the others are invalid, "no recorded measurement". The example's operation file
(`examples/replay/fms-a100-tpe.yaml`) lists the recorded ones as the `candidates` option, so
every measurement it spends is of a recorded run. Here: the README runs that file, the file is
a valid `optuna_tpe` operation on the example space, and (where `../shared/data` is) its
candidates are exactly the configurations the table records, as `recorded_points.py` lists
them. `tests/integration/test_replay_loop.py` runs it through the services.
"""

from __future__ import annotations

import runpy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from discospace.actuator.replay.config import load_config
from discospace.actuator.replay.table import ReplayTable
from discospace.cli.requests import load_operation_file
from discospace.core import ExperimentSpec, canonical_json
from discospace.core.loading import load_discovery_space
from discospace.events import SpaceRegistered
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.explorer.operators.optuna_search.operator import OptunaTpe
from discospace.traces.data import TraceDataMissingError, data_dir

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "replay"
OPERATION = EXAMPLES / "fms-a100-tpe.yaml"


@pytest.fixture(scope="module")
def table() -> ReplayTable:
    try:
        data_dir()
    except TraceDataMissingError as error:
        pytest.skip(str(error))
    config = load_config(EXAMPLES / "fms-a100.yaml")
    assert config.table is not None
    return ReplayTable.load(config.table, EXAMPLES)


def fms_space() -> KnownSpace:
    """The example space as the explorer knows it once registered with the replay's catalog."""
    space = load_discovery_space(EXAMPLES / "fms-a100-space.yaml")
    experiment = ExperimentSpec(
        actuator="replay",
        experiment="fms-a100-finetune",
        target_properties=("train_tokens_per_second",),
        required_properties=space.entity_space.names,
    )
    registered = SpaceRegistered(
        event_id="space-event",
        occurred_at=datetime(2026, 11, 21, 17, 0, tzinfo=UTC),
        submission_id="sub-1",
        space_id=space.id,
        spec=space.to_spec(),
        experiments=(experiment,),
    )
    known = known_space(registered)
    assert isinstance(known, KnownSpace)
    return known


def keys(points: Any) -> set[str]:
    return {canonical_json(dict(point)) for point in points}


def test_the_readme_optimizer_example_runs_the_file_that_lists_the_recorded_points() -> None:
    readme = (REPO / "README.md").read_text()
    example = readme.split("### Optimizers", 1)[1].split("### Benchmarks", 1)[0]

    assert "operation create -f examples/replay/fms-a100-tpe.yaml" in example
    assert "optuna_tpe" in OPERATION.read_text()


def test_the_example_is_a_valid_optuna_tpe_operation_on_the_fms_space() -> None:
    operation = load_operation_file(OPERATION)
    space = fms_space()
    candidates = operation.parameters.options["candidates"]

    assert operation.operator == "optuna_tpe"
    assert OptunaTpe().check(operation.parameters, space) is None
    assert len(keys(candidates)) == len(candidates) == 124
    assert all(point in space.entity_space for point in candidates)


def test_its_candidates_are_the_configurations_the_table_records(table: ReplayTable) -> None:
    space = load_discovery_space(EXAMPLES / "fms-a100-space.yaml").entity_space
    recorded = [e.as_dict() for e in space.sequential() if table.rows_of(e.as_dict())]
    listed = load_operation_file(OPERATION).parameters.options["candidates"]
    script = runpy.run_path(str(EXAMPLES / "recorded_points.py"))

    assert keys(listed) == keys(recorded)
    assert len(recorded) == 124
    assert script["recorded_points"](EXAMPLES / "fms-a100.yaml", space) == recorded
