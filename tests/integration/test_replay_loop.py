"""End to end with the replay actuator: a random walk over the fms-acceleration A100 space.

Every service runs as a process on the real broker; the actuator worker replays
`../shared/data/fms-acceleration-a100/a100_80gb.csv` through `examples/replay/fms-a100.yaml`
(skipped, saying where it looked, when the data folder is absent). The space holds every
combination of the table's distinct values, so the walk meets configurations the table records
as finished (valid), as out of memory (invalid, "out of memory") and not at all (invalid, "no
recorded measurement"); the expected counts are computed here from the CSV itself.
"""

from __future__ import annotations

import csv
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from discospace.client import Client
from discospace.testing.loop import REPO, Loop
from discospace.traces.data import TraceDataMissingError, data_dir

pytestmark = pytest.mark.integration

EXAMPLES = REPO / "examples" / "replay"
EXPERIMENT = "fms-a100-finetune"
POOL = "a100-80gb"
COLUMNS = {
    "model_name": "model_name_or_path",
    "number_gpus": "num_gpus",
    "per_device_batch_size": "per_device_train_batch_size",
    "framework_config": "framework_config",
    "peft_method": "peft_method",
}
NUMERIC = {"number_gpus", "per_device_batch_size"}


@pytest.fixture(scope="module")
def table_rows() -> list[dict[str, str]]:
    try:
        folder = data_dir()
    except TraceDataMissingError as error:
        pytest.skip(str(error))
    with (folder / "fms-acceleration-a100" / "a100_80gb.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def configuration(row: dict[str, str]) -> tuple[Any, ...]:
    """A CSV row's configuration as the space names it (empty PEFT method: 'none')."""
    values: dict[str, Any] = {name: row[column] for name, column in COLUMNS.items()}
    values["peft_method"] = values["peft_method"] or "none"
    return tuple(int(values[n]) if n in NUMERIC else values[n] for n in COLUMNS)


def distinct_values(rows: list[dict[str, str]]) -> dict[str, list[Any]]:
    """Each property's distinct values in the table, in order of first appearance."""
    found: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for row in rows:
        for name, value in zip(COLUMNS, configuration(row), strict=True):
            if value not in found[name]:
                found[name].append(value)
    return found


@pytest.fixture(scope="module")
def loop(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, table_rows: Any
) -> Iterator[Loop]:
    workdir = tmp_path_factory.mktemp("replay-loop")
    config = yaml.safe_load((EXAMPLES / "fms-a100.yaml").read_text())
    config["table"]["duration"]["scale"] = 1e-5  # the recorded runtime, 100 000 times faster
    (workdir / "replay.yaml").write_text(yaml.safe_dump(config))
    running = Loop(kafka_bootstrap, workdir)
    try:
        for name in ("registry", "sampler", "projector", "explorer"):
            running.start(name)
        running.actuator(
            "replay-a100",
            POOL,
            {"config": str(workdir / "replay.yaml")},
            DISCOSPACE_ACTUATOR_ACTUATOR="replay",
            DISCOSPACE_ACTUATOR_CONCURRENCY="3",
        )
        running.wait_healthy()
        wait_for_catalog(running, EXPERIMENT)
        yield running
    finally:
        running.stop()


def wait_for_catalog(loop: Loop, experiment: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = loop.cli("actuators", "--json")
        if answer.returncode == 0 and experiment in answer.stdout:
            return
        time.sleep(0.5)
    raise AssertionError(f"the replay worker never announced {experiment}: {loop.logs()}")


def cli_json(loop: Loop, *args: str) -> Any:
    answer = loop.cli(*args)
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return json.loads(answer.stdout)


def space_from_table(loop: Loop, rows: list[dict[str, str]]) -> str:
    values = distinct_values(rows)
    spec = {
        "sample_store": "fms-a100-replay-loop",
        "entity_space": [{"name": name, "values": values[name]} for name in COLUMNS],
        "measurement_space": [{"actuator": "replay", "experiment": EXPERIMENT}],
    }
    path = loop.workdir / "fms-space.yaml"
    path.write_text(yaml.safe_dump(spec))
    answer = loop.cli("space", "create", "-f", str(path))
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return answer.stdout.strip()


def walk(loop: Loop, space_id: str) -> str:
    path = loop.workdir / "walk.yaml"
    parameters = {"number_entities": "all", "batch_size": 12, "max_retries": 2}
    path.write_text(yaml.safe_dump({"operator": "random_walk", "parameters": parameters}))
    answer = loop.cli(
        "operation",
        "create",
        "-f",
        str(path),
        "--space",
        space_id,
        "--watch",
        "--interval",
        "0.5",
        timeout_s=600,
    )
    assert answer.returncode == 0, answer.stderr + loop.logs()
    return answer.stdout.strip().splitlines()[0]


def expected_outcomes(rows: list[dict[str, str]]) -> dict[str, int]:
    """From the CSV: configurations of the space by what their rows record.

    A configuration with several rows is several runs; only when all of them lack throughput
    is it certainly out of memory (the replay serves one of its runs per measurement)."""
    by_configuration: dict[tuple[Any, ...], list[bool]] = defaultdict(list)
    for row in rows:
        by_configuration[configuration(row)].append(bool(row["train_tokens_per_second"]))
    size = 1
    for values in distinct_values(rows).values():
        size *= len(values)
    finished = [any(runs) for runs in by_configuration.values()]
    mixed = sum(1 for runs in by_configuration.values() if any(runs) and not all(runs))
    return {
        "size": size,
        "out_of_memory": finished.count(False),
        "finished": finished.count(True),
        "mixed": mixed,
        "no_row": size - len(by_configuration),
        "rows_without_throughput": sum(1 for r in rows if not r["train_tokens_per_second"]),
    }


def settled_unmeasured(loop: Loop, space_id: str, timeout_s: float = 30) -> list[dict[str, Any]]:
    """The unmeasured view once the projector has every result: the operation's end and the
    last measurements travel on different topics, so the view may lag a moment behind."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = cli_json(
            loop, "space", "show", space_id, "--include", "unmeasured", "--format", "json"
        )
        pending = [r for r in rows if not reason_of(r).startswith("invalid: ")]
        if not pending or time.monotonic() > deadline:
            return list(rows)
        time.sleep(0.5)


def reason_of(row: dict[str, Any]) -> str:
    reasons = [str(v) for k, v in row.items() if "reason" in k and v]
    assert len(reasons) == 1, row
    return reasons[0]


def test_a_random_walk_measures_every_fms_configuration_and_shows_the_invalid_ones_with_why(
    loop: Loop, table_rows: list[dict[str, str]]
) -> None:
    expected = expected_outcomes(table_rows)
    space_id = space_from_table(loop, table_rows)

    operation_id = walk(loop, space_id)
    progress = cli_json(loop, "operation", "show", operation_id, "--json")
    unmeasured = settled_unmeasured(loop, space_id)
    measured = cli_json(
        loop, "space", "show", space_id, "--include", "measured", "--format", "json"
    )
    never = cli_json(loop, "space", "show", space_id, "--include", "unsampled", "--format", "json")
    reasons = [reason_of(row) for row in unmeasured]

    assert expected["mixed"] == 0, "each configuration has one run, so the counts are exact"
    assert progress["status"] == "completed"
    assert progress["counts"]["measured"] == expected["size"]  # valid and invalid results
    assert progress["counts"]["invalid"] == expected["out_of_memory"] + expected["no_row"]
    assert never == []
    assert len(measured) == expected["finished"]
    assert len(measured) + len(unmeasured) == expected["size"]
    assert Counter(reasons) == {
        "invalid: out of memory": expected["out_of_memory"],
        "invalid: no recorded measurement": expected["no_row"],
    }
    assert expected["out_of_memory"] == expected["rows_without_throughput"]
    assert_measured_values_are_the_recorded_ones(measured, table_rows)


def assert_measured_values_are_the_recorded_ones(
    measured: list[dict[str, Any]], rows: list[dict[str, str]]
) -> None:
    recorded = {configuration(row): row for row in rows}
    for row in measured:
        key = tuple(row[name] for name in COLUMNS)
        throughput = [v for k, v in row.items() if k.endswith("train_tokens_per_second")]
        assert throughput == [float(recorded[key]["train_tokens_per_second"])], key


def test_the_readme_tpe_example_spends_every_measurement_on_a_recorded_run(
    loop: Loop, table_rows: list[dict[str, str]]
) -> None:
    """`examples/replay/fms-a100-tpe.yaml` on `fms-a100-space.yaml`, as the README runs them:
    its candidates keep all 40 measurements on configurations the table records."""
    recorded = {configuration(row) for row in table_rows}
    space_id = loop.cli_ok("space", "create", "-f", str(EXAMPLES / "fms-a100-space.yaml"))
    output = loop.cli_ok(
        "operation", "create", "-f", str(EXAMPLES / "fms-a100-tpe.yaml"), "--space",
        space_id.strip(), "--watch", "--interval", "0.5",
    )  # fmt: skip
    operation_id = output.strip().splitlines()[0]
    progress = cli_json(loop, "operation", "show", operation_id, "--json")
    with Client(loop.projector_url) as client:
        results = client.operation_results(operation_id)
    measured = [tuple(r.entity_values[name] for name in COLUMNS) for r in results]

    assert progress["stop_reason"] == "max_measurements", progress
    assert len(measured) >= 40
    assert [point for point in measured if point not in recorded] == []
