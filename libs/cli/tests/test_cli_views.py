"""The read commands (space get/show, operation show, actuators) through the real client,
answered by a scripted projector at the HTTP port (httpx's MockTransport)."""

import io
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pandas as pd
import pytest
from matplotlib.axes import Axes
from rich.console import Console
from typer.testing import CliRunner

import discospace.client
import discospace.client.client
from discospace.cli.errors import CliError
from discospace.cli.main import app
from discospace.cli.space_views import MAX_ROWS
from discospace.client import (
    ActuatorPool,
    BestSoFar,
    OperationCounts,
    OperationProgress,
    SpaceDetail,
    SpaceSummary,
)
from discospace.core import ExperimentSpec, load_space_spec
from discospace.testing.kafka import free_port

REPO_ROOT = Path(__file__).resolve().parents[3]
SEED = load_space_spec(REPO_ROOT / "tests" / "data" / "seed-space.yaml")
AT = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
SPACE_ID = "space-0123456789ab"

runner = CliRunner()

REGISTERED = SpaceSummary(
    space_id=SPACE_ID,
    submission_ids=["sub-1"],
    status="registered",
    sample_store="2351e8",
    size=80,
    registered_at=AT,
)
REJECTED = SpaceSummary(
    space_id="space-ffffffffffff",
    status="rejected",
    reason="experiment 'x' of actuator 'A' is not in the catalog",
    sample_store="s",
    size=4,
)
UNREAD = SpaceSummary(
    space_id=None,
    submission_ids=["sub-9f"],
    status="rejected",
    reason="the spec cannot be read: bad",
)
ENTITIES = pd.DataFrame(
    {
        "batch_size": [1, 2],
        "number_gpus": [2, 4],
        "train_tokens_per_second": [1234.5, float("nan")],
        "reason": [None, "out of memory"],
    }
)
PROGRESS = OperationProgress(
    operation_id="op-1",
    space_id=SPACE_ID,
    operator="random_walk",
    status="running",
    counts=OperationCounts(requested=10, measured=4, reused=1, failed=1, in_flight=4),
    done=6,
    total=80,
    best=BestSoFar(
        property="train_tokens_per_second", direction="max", value=1234.5, entity_id="e1"
    ),
)
FINETUNE = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0",
    target_properties=("train_tokens_per_second", "peak_gpu_memory_mib"),
    required_properties=("model_name", "batch_size"),
)
OTHER_SPACE = "space-ffffffffffff"
OPERATIONS = [
    PROGRESS,
    OperationProgress(
        operation_id="op-2",
        space_id=SPACE_ID,
        operator="optuna_tpe",
        status="completed",
        done=20,
        total=20,
        stop_reason="requested_entities_measured",
        requested_at=AT,
    ),
    OperationProgress(
        operation_id="op-3",
        space_id=OTHER_SPACE,
        operator="random_walk",
        status="failed",
        failure_reason="space 'space-ffffffffffff' is not registered",
    ),
]
POOL = ActuatorPool(
    actuator="SFTTrainer",
    pool="a100",
    gpu_model="NVIDIA-A100-80GB-PCIe",
    experiments=[],
    workers=["a100-0", "a100-1"],
)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return buffer.getvalue()


def _export(request: httpx.Request) -> httpx.Response:
    """The file in the format asked for, with the media type the projector gives it."""
    fmt = request.url.params["format"]
    limit = request.url.params.get("limit")
    rows = ENTITIES if limit is None else ENTITIES.head(int(limit))  # in the store's order
    if fmt == "parquet":
        content, media = _parquet(rows), "application/vnd.apache.parquet"
    elif fmt == "csv":
        content, media = rows.to_csv(index=False).encode(), "text/csv; charset=utf-8"
    else:
        content, media = rows.to_json(orient="records").encode(), "application/json"
    return httpx.Response(200, content=content, headers={"content-type": media})


def projector(request: httpx.Request) -> httpx.Response:
    """What the projector answers (documents in the shape of its models)."""
    identifier = request.url.params.get("id")
    known_space = identifier == SPACE_ID
    routes: dict[str, Callable[[], httpx.Response]] = {
        "/spaces": lambda: _json([REGISTERED.model_dump(mode="json"), REJECTED.model_dump()]),
        "/space": lambda: (
            _json(
                SpaceDetail(
                    **REGISTERED.model_dump(), spec=SEED, experiments=[FINETUNE]
                ).model_dump(mode="json")
            )
            if known_space
            else _not_known("space", identifier)
        ),
        "/space/entities": lambda: (
            _export(request) if known_space else _not_known("space", identifier)
        ),
        "/operation": lambda: (
            _json(PROGRESS.model_dump(mode="json"))
            if identifier == "op-1"
            else _not_known("operation", identifier)
        ),
        "/actuators": lambda: _json([POOL.model_dump(mode="json")]),
        "/operations": lambda: _json([op.model_dump(mode="json") for op in OPERATIONS]),
    }
    return routes[request.url.path]()


def _json(data: object) -> httpx.Response:
    return httpx.Response(200, content=json.dumps(data, default=str).encode())


def _not_known(kind: str, identifier: str | None) -> httpx.Response:
    return httpx.Response(404, json={"error": f"{kind} '{identifier}' is not known."})


@pytest.fixture(autouse=True)
def scripted_projector(monkeypatch: pytest.MonkeyPatch) -> None:
    real = discospace.client.Client

    class Scripted(real):  # type: ignore[misc,valid-type]
        def __init__(self, base_url: str | None = None) -> None:
            super().__init__(base_url, transport=httpx.MockTransport(projector))

    monkeypatch.setattr(discospace.client, "Client", Scripted)


def cli(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_space_get_lists_every_space_with_its_status_and_reason() -> None:
    result = cli("space", "get")
    assert result.exit_code == 0, result.output
    assert "Spaces (2)" in result.stdout
    for text in (SPACE_ID, "registered", "2351e8", "80", "rejected", "is not in the catalog"):
        assert text in result.stdout


def test_space_list_narrower_than_its_table_prints_every_id_whole() -> None:
    """Rich shrank the table to the width of a pipe or a terminal: an id lost its last
    characters, and one copied from the list named no space."""
    result = runner.invoke(app, ["space", "list"], env={"COLUMNS": "50"})
    assert result.exit_code == 0, result.output
    assert SPACE_ID in result.stdout
    assert "2026-11-21 17:00" in result.stdout


def test_a_submission_refused_before_it_had_a_space_id_is_named_by_its_submission() -> None:
    import discospace.cli.space_views as views

    unread = views._name(UNREAD)
    assert unread == "submission sub-9f"
    shown = io.StringIO()
    views._list([REGISTERED, UNREAD], Console(file=shown, width=80))
    assert "None" not in shown.getvalue()
    assert "submission sub-9f rejected: the spec cannot be read: bad" in shown.getvalue()


def test_watching_an_operation_the_projector_does_not_know_ends_within_seconds() -> None:
    """`operation watch op-typo` waited 60 s in silence, the grace of `create --watch`, whose
    operation was just requested; one requested elsewhere is projected within seconds."""
    result = cli("operation", "watch", "op-typo", "--interval", "0.5")
    assert result.exit_code == 2
    assert "has not seen the operation after 5s: is the id right" in result.stderr


def test_space_list_is_space_get_without_an_id() -> None:
    listed, got = cli("space", "list"), cli("space", "get")
    assert listed.exit_code == 0, listed.output
    assert listed.stdout == got.stdout
    assert "Spaces (2)" in listed.stdout
    as_json = cli("space", "list", "--json")
    assert [space["space_id"] for space in json.loads(as_json.stdout)] == [
        space["space_id"] for space in json.loads(cli("space", "get", "--json").stdout)
    ]


def test_space_get_of_one_space_describes_its_properties_and_experiments() -> None:
    result = cli("space", "get", SPACE_ID)
    assert result.exit_code == 0, result.output
    assert f"Space {SPACE_ID}: registered" in result.stdout
    assert "80 entities; 4 categorical, 3 discrete" in result.stdout
    assert "finetune-lora-fsdp-r-4-a-16-tm-default-v1.2.0" in result.stdout


def test_space_get_of_one_space_lists_each_experiments_target_properties() -> None:
    result = cli("space", "get", SPACE_ID)
    assert result.exit_code == 0, result.output
    assert "    target properties    train_tokens_per_second, peak_gpu_memory_mib" in (
        result.stdout
    )
    assert "    required properties  model_name, batch_size" in result.stdout
    assert "target properties from the registry's catalog" in result.stdout


def test_space_get_of_one_space_shows_each_discrete_range_and_interval() -> None:
    result = cli("space", "get", SPACE_ID)
    row = next(line for line in result.stdout.splitlines() if line.startswith("│ batch_size"))
    assert [cell.strip() for cell in row.strip("│").split("│")] == [
        "batch_size", "[1, 2, 4, 8, 16, 32, 64, 128]", "-", "-", "8",
    ]  # fmt: skip


def test_space_get_json_is_the_projector_document() -> None:
    result = cli("space", "get", "--json")
    assert [space["status"] for space in json.loads(result.stdout)] == ["registered", "rejected"]


def test_space_show_prints_one_column_per_property_and_a_dash_for_no_value() -> None:
    result = cli("space", "show", SPACE_ID, "--include", "all")
    assert result.exit_code == 0, result.output
    assert f"Space {SPACE_ID}: all entities (2)" in result.stdout
    header = next(line for line in result.stdout.splitlines() if "batch_size" in line)
    for column in ("number_gpus", "train_tokens_per_second", "reason"):
        assert column in header
    assert "1234.5" in result.stdout
    assert "out of memory" in result.stdout
    assert "nan" not in result.stdout.lower()


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_space_show_exports_to_a_file(tmp_path: Path, fmt: str) -> None:
    output = tmp_path / f"entities.{fmt}"
    result = cli("space", "show", SPACE_ID, "--format", fmt, "-o", str(output))
    assert result.exit_code == 0, result.output
    readers = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}
    frame = readers[fmt](output)
    assert list(frame.columns) == list(ENTITIES.columns)
    assert len(frame) == 2


def test_space_show_csv_goes_to_stdout_without_an_output_file() -> None:
    result = cli("space", "show", SPACE_ID, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "batch_size,number_gpus,train_tokens_per_second,reason"


def test_an_include_the_views_do_not_have_is_refused_by_the_command_line() -> None:
    result = cli("space", "show", SPACE_ID, "--include", "everything")
    assert result.exit_code == 2
    assert "everything" in result.stderr


def test_a_space_the_projector_does_not_know_is_one_line() -> None:
    result = cli("space", "show", "space-unknown")
    assert result.exit_code == 2
    assert result.stderr == "error: space 'space-unknown' is not known.\n"


def test_an_id_too_long_for_a_url_is_one_line_about_the_id_not_the_projector_url() -> None:
    """httpx refuses a query over 64 KiB as an invalid URL: that was told as a bad projector
    URL, sending the user to check a setting that was fine."""
    result = cli("space", "show", "x" * 70_000)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: the id given is too long to send (70,000 characters); no id is that long: "
        "check what was given.\n"
    )


def test_operation_show_prints_status_counts_and_best() -> None:
    result = cli("operation", "show", "op-1")
    assert result.exit_code == 0, result.output
    for text in ("running", "counts.in_flight", "best.value", "1234.5", "random_walk"):
        assert text in result.stdout


def _operation_ids(stdout: str) -> list[str]:
    return [line.split("│")[1].strip() for line in _table_rows(stdout)]


def test_operation_list_lists_every_operation_with_its_space_status_and_progress() -> None:
    result = cli("operation", "list")
    assert result.exit_code == 0, result.output
    assert "Operations (3)" in result.stdout
    assert _operation_ids(result.stdout) == ["op-1", "op-2", "op-3"]
    header = next(line for line in result.stdout.splitlines() if "operation_id" in line)
    assert header.split() == [
        "┃", "operation_id", "┃", "space_id", "┃", "operator", "┃", "status", "┃", "done", "┃",
        "best", "┃", "requested_at", "┃",
    ]  # fmt: skip
    assert "6/80" in _table_rows(result.stdout)[0]
    assert "train_tokens_per_second=1234.5" in _table_rows(result.stdout)[0]
    assert result.stdout.endswith("op-3 failed: space 'space-ffffffffffff' is not registered\n")


@pytest.mark.parametrize(
    ("options", "listed"),
    [
        (["--space", SPACE_ID], ["op-1", "op-2"]),
        (["--status", "failed"], ["op-3"]),
        (["--status", "running", "--status", "completed"], ["op-1", "op-2"]),
        (["--space", SPACE_ID, "--status", "failed"], []),
    ],
)
def test_operation_list_narrows_to_a_space_and_statuses(options: list[str], listed: list[str]):
    result = cli("operation", "list", *options)
    assert result.exit_code == 0, result.output
    assert _operation_ids(result.stdout) == listed
    as_json = json.loads(cli("operation", "list", *options, "--json").stdout)
    assert [op["operation_id"] for op in as_json] == listed


def test_operation_list_refuses_parent_and_top_level_together() -> None:
    """Together they always listed nothing, in silence."""
    result = cli("operation", "list", "--parent", "op-1", "--top-level")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: --parent and --top-level exclude each other: a pipeline's operations are not "
        "top-level; give one of them\n",
    )


def test_operation_list_refuses_a_status_operations_never_have() -> None:
    result = cli("operation", "list", "--status", "done")
    assert result.exit_code == 2
    assert "'done' is not one of" in result.stderr


def test_the_client_filters_operations_by_space_and_status() -> None:
    transport = httpx.MockTransport(projector)
    with discospace.client.client.Client("http://projector", transport=transport) as client:
        assert [op.operation_id for op in client.operations()] == ["op-1", "op-2", "op-3"]
        by_space = client.operations(space_id=OTHER_SPACE)
        assert [op.operation_id for op in by_space] == ["op-3"]
        ended = client.operations(status=["completed", "failed"])
        assert [op.operation_id for op in ended] == ["op-2", "op-3"]
        assert [op.operation_id for op in client.operations(status="running")] == ["op-1"]


def test_operation_show_of_an_unknown_operation_is_one_line() -> None:
    result = cli("operation", "show", "op-404")
    assert (result.exit_code, result.stderr) == (2, "error: operation 'op-404' is not known.\n")


def test_actuators_lists_pools_gpu_models_and_workers() -> None:
    result = cli("actuators")
    assert result.exit_code == 0, result.output
    for text in ("SFTTrainer", "a100", "NVIDIA-A100-80GB-PCIe", "a100-0, a100-1"):
        assert text in result.stdout


def test_a_projector_that_does_not_answer_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.undo()
    url = f"http://127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["--projector", url, "space", "get"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: the projector at {url} is not answering: start it with `make up`.\n"
    )


@pytest.mark.parametrize("scheme", ["http://", "htp://"])
def test_a_projector_url_holding_a_password_is_shown_without_it(
    monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    """A proxy's user and password in the URL were printed with every error."""
    monkeypatch.undo()
    port = free_port()
    result = runner.invoke(
        app, ["--projector", f"{scheme}alice:hunter2@127.0.0.1:{port}", "space", "get"]
    )
    assert result.exit_code == 2
    assert "hunter2" not in result.stderr
    assert f"{scheme}alice:***@127.0.0.1:{port}" in result.stderr


def _table_rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("│")]


def test_space_show_sorts_the_table_largest_first_with_missing_values_last() -> None:
    largest_first = cli("space", "show", SPACE_ID, "--sort", "number_gpus")
    smallest_first = cli("space", "show", SPACE_ID, "--sort", "number_gpus", "--ascending")

    assert largest_first.exit_code == 0, largest_first.output
    assert "out of memory" in _table_rows(largest_first.stdout)[0]  # 4 GPUs before 2
    assert "1234.5" in _table_rows(smallest_first.stdout)[0]


def test_a_column_of_numbers_and_text_sorts_numbers_by_value_then_text() -> None:
    """The projector sends a column holding 8, 64 and "auto" as text: sorted as text, 16 came
    after 8 and before 64 only by chance, and 100 before 8."""
    from discospace.cli.space_views import _sorted

    frame = pd.DataFrame({"batch_size": ["8", "auto", "100", None, "16", "2.5"]})
    ordered = _sorted(frame, "batch_size", ascending=True)["batch_size"].tolist()
    assert ordered[:5] == ["2.5", "8", "16", "100", "auto"]
    assert pd.isna(ordered[5])
    largest_first = _sorted(frame, "batch_size", ascending=False)["batch_size"].tolist()
    assert largest_first[:5] == ["auto", "100", "16", "8", "2.5"]


def test_space_show_with_sort_and_limit_shows_the_first_rows_of_the_order() -> None:
    unsorted = cli("space", "show", SPACE_ID, "--limit", "1")
    largest = cli("space", "show", SPACE_ID, "--sort", "number_gpus", "--limit", "1")

    assert ["1234.5" in row for row in _table_rows(unsorted.stdout)] == [True]
    assert ["out of memory" in row for row in _table_rows(largest.stdout)] == [True]


@pytest.mark.parametrize("cap", [2, 5])
def test_space_show_sorted_among_part_of_the_never_sampled_entities_says_so(
    monkeypatch: pytest.MonkeyPatch, cap: int
) -> None:
    """Without a limit the projector lists a space's never-sampled entities up to a cap, in
    grid order: "largest first" was the largest of the first ones, said nowhere."""
    measured = pd.DataFrame({"batch_size": [1], "status": ["measured"]})
    unsampled = pd.DataFrame({"batch_size": [2, 3, 4], "status": ["unsampled"] * 3})

    def entities(request: httpx.Request) -> httpx.Response:
        limit = request.url.params.get("limit")
        listed = unsampled.head(cap if limit is None else int(limit))  # the projector's cap
        if request.url.params["include"] != "unsampled":
            listed = pd.concat([measured, listed])
        media = {"content-type": "application/vnd.apache.parquet"}
        return httpx.Response(200, content=_parquet(listed), headers=media)

    monkeypatch.setattr(sys.modules[__name__], "_export", entities)
    result = cli("space", "show", SPACE_ID, "--sort", "batch_size")

    assert result.exit_code == 0, result.output
    if cap < 3:
        assert result.stderr.startswith(
            f"note: sorted among the first {cap} never-sampled entities (in grid order)"
        )
    else:
        assert result.stderr == ""


def test_space_show_sorting_by_a_column_it_does_not_have_names_the_columns() -> None:
    result = cli("space", "show", SPACE_ID, "--sort", "speed")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no column 'speed' to sort by; the columns are: ")
    assert "batch_size" in result.stderr


def test_space_plot_draws_the_measured_value_against_a_property_into_a_png(
    tmp_path: Path,
) -> None:
    output = tmp_path / "plot.png"
    result = cli(
        "space",
        "plot",
        SPACE_ID,
        "--x",
        "batch_size",
        "--y",
        "train_tokens_per_second",
        "--line",
        "number_gpus",
        "-o",
        str(output),
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(output)
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_space_plot_lines_average_per_x_and_count_entities_per_line() -> None:
    from discospace.cli.space_plot import lines

    frame = pd.DataFrame(
        {
            "size": ["a", "a", "a", "b"],
            "batch_size": [1, 1, 4, 1],
            "speed": [10.0, 20.0, 40.0, float("nan")],
        }
    )
    assert lines(frame, "batch_size", "speed", "size") == {"a": ([1, 4], [15.0, 40.0], 3)}


def test_space_plot_says_how_many_measured_entities_it_could_not_draw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entity with a value but no x was left out of the picture and of its counts, with
    nothing said."""
    gaps = pd.DataFrame(
        {
            "batch_size": [1.0, None, 4.0],
            "number_gpus": [2, 2, 4],
            "train_tokens_per_second": [10.0, 20.0, float("inf")],
        }
    )
    monkeypatch.setattr(sys.modules[__name__], "ENTITIES", gaps)
    output = tmp_path / "plot.png"
    args = ["--x", "batch_size", "--y", "train_tokens_per_second", "-o", str(output)]
    result = cli("space", "plot", SPACE_ID, *args)

    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "2 of the 3 entities with a value of 'train_tokens_per_second' are not drawn: they have "
        "no value of 'batch_size', or an infinite one\n"
    )


def test_space_plot_orders_x_by_value_when_the_projector_sent_numbers_as_text() -> None:
    """A column holding numbers and text comes as text: the axis read 1, 10, 2. An infinite
    y is left out, and out of the count, as matplotlib leaves it out of the drawing."""
    from discospace.cli.space_plot import lines

    numbers = pd.DataFrame({"bs": ["1", "10", "2"], "tps": [1.0, 3.0, 2.0]})
    mixed = pd.DataFrame({"bs": ["10", "auto", "2", "10"], "tps": [1.0, 3.0, 2.0, float("inf")]})

    assert lines(numbers, "bs", "tps", None) == {"all": ([1, 2, 10], [1.0, 2.0, 3.0], 3)}
    assert lines(mixed, "bs", "tps", None) == {"all": (["2", "10", "auto"], [2.0, 1.0, 3.0], 3)}


def test_space_plot_leaves_out_entities_without_x_and_says_so_when_none_has_one() -> None:
    from discospace.cli.space_plot import lines

    frame = pd.DataFrame({"batch_size": [None, 2.0], "speed": [10.0, 20.0]})
    nothing = pd.DataFrame({"batch_size": [None, None], "speed": [10.0, 20.0]})

    assert lines(frame, "batch_size", "speed", None) == {"all": ([2.0], [20.0], 1)}
    with pytest.raises(CliError) as refused:
        lines(nothing, "batch_size", "speed", None)
    assert str(refused.value) == (
        "no measured entity with a value for 'speed' has one for 'batch_size'"
    )


def test_space_plot_of_a_column_the_table_lacks_is_one_line(tmp_path: Path) -> None:
    result = cli(
        "space",
        "plot",
        SPACE_ID,
        "--x",
        "batch",
        "--y",
        "train_tokens_per_second",
        "-o",
        str(tmp_path / "p.png"),
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no column 'batch' in the space's table")


def test_space_plot_of_a_column_of_words_is_one_line() -> None:
    from discospace.cli.space_plot import lines

    frame = pd.DataFrame({"batch_size": [1, 2], "model": ["small", "large"]})
    with pytest.raises(CliError, match="'model' holds values that are not numbers"):
        lines(frame, "batch_size", "model", None)


@pytest.mark.parametrize("where", ["missing-dir/out.csv", "."])
def test_space_show_to_a_path_it_cannot_write_is_one_line(tmp_path: Path, where: str) -> None:
    output = tmp_path / where
    for fmt in ("csv", "table"):
        result = cli("space", "show", SPACE_ID, "--format", fmt, "-o", str(output))
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: cannot write {output}: ")
        assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::1", "is not valid"),
        ("ftp://127.0.0.1", "is not valid: it must start with http:// or https://."),
        ("127.0.0.1:8105", "is not valid: it must start with http:// or https://."),
        ("http://", "is not valid: it names no host."),
        ("http://127.0.0.1:70000", "is not valid: its port is not a number from 1 to 65535."),
        ("http://127.0.0.1:0", "is not valid: its port is not a number from 1 to 65535."),
        ("http://127.0.0.1:port", "is not valid: its port is not a number from 1 to 65535."),
    ],
)
def test_a_malformed_projector_url_is_one_line_saying_so(
    monkeypatch: pytest.MonkeyPatch, url: str, said: str
) -> None:
    monkeypatch.undo()
    result = runner.invoke(app, ["--projector", url, "space", "get"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: the projector URL {url!r} {said}")
    assert len(result.stderr.splitlines()) == 1


def test_a_token_with_characters_other_than_ascii_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.undo()
    result = runner.invoke(app, ["space", "get"], env={"DISCOSPACE_API_TOKEN": "tökén"})
    assert result.exit_code == 2, result.output
    assert result.stderr == ("error: the API token holds characters other than ASCII; check it.\n")


@pytest.mark.parametrize("token", ["a\nb", "a\tb", "a\x1bb"])
def test_a_token_with_a_control_character_is_one_line_not_a_projector_away(
    monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.undo()
    result = runner.invoke(app, ["space", "get"], env={"DISCOSPACE_API_TOKEN": token})
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "error: the API token holds a line break or a control character; check it.\n"
    )
    # a token file's final line break is not part of the token
    fine = runner.invoke(app, ["space", "get"], env={"DISCOSPACE_API_TOKEN": "abc\n"})
    assert "control character" not in fine.output


@pytest.mark.parametrize("interval", ["inf", "1e300", "3601"])
@pytest.mark.parametrize(
    "command",
    [("operation", "watch", "op-1"), ("operation", "create", "-f", "op.yaml", "--watch")],
)
def test_an_interval_too_long_to_sleep_is_refused_in_one_sentence(
    command: tuple[str, ...], interval: str
) -> None:
    result = cli(*command, "--interval", interval)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "'--interval'" in result.stderr
    assert "less than or equal to 3600" in result.stderr


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "parquet"])
def test_a_server_that_is_not_the_projector_is_one_sentence_and_overwrites_no_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str
) -> None:
    page = httpx.Response(200, text="<html>welcome</html>", headers={"content-type": "text/html"})
    real = discospace.client.client.Client  # not the scripted projector of the fixture

    class Elsewhere(real):  # type: ignore[misc,valid-type]
        def __init__(self, base_url: str | None = None) -> None:
            super().__init__(base_url, transport=httpx.MockTransport(lambda _: page))

    monkeypatch.setattr(discospace.client, "Client", Elsewhere)
    kept = tmp_path / "keep"
    kept.write_text("what the user had")
    output = [] if fmt == "table" else ["--format", fmt, "-o", str(kept)]

    shown = cli("space", "show", SPACE_ID, *output)
    plotted = cli("space", "plot", SPACE_ID, "--x", "batch_size", "--y", "tps", "-o", "p.png")

    for result in (shown, plotted):
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert "answered /space/entities with a document this client cannot read" in (result.stderr)
    assert kept.read_text() == "what the user had"


def test_space_plot_keeps_text_values_that_read_as_one_number_apart() -> None:
    """`1.1` and `1.10` (a version) are two entities: read as numbers they became one point,
    the mean of both."""
    from discospace.cli.space_plot import lines

    frame = pd.DataFrame({"version": ["1.1", "1.10", "1.2"], "tps": [100.0, 300.0, 200.0]})
    assert lines(frame, "version", "tps", None) == {
        "all": (["1.1", "1.10", "1.2"], [100.0, 300.0, 200.0], 3)
    }


def _drawn(series: dict, x: str = "x") -> Axes:
    from matplotlib import pyplot

    from discospace.cli.space_plot import _drawing

    figure, axes = pyplot.subplots()
    _drawing(series, x, "tps", "model")(axes)
    figure.canvas.draw()
    pyplot.close(figure)
    return axes


def test_space_plot_orders_a_text_axis_once_for_every_line() -> None:
    """matplotlib orders categories as the lines first show them: a line lacking `a` put it
    last, and the line holding it was drawn right to left and back."""
    axes = _drawn({"A": (["b", "c"], [1.0, 2.0], 2), "B": (["a", "b", "c"], [1.0, 2.0, 3.0], 3)})

    assert [label.get_text() for label in axes.get_xticklabels()] == ["a", "b", "c"]
    assert [list(line.get_xdata()) for line in axes.get_lines()] == [[1, 2], [0, 1, 2]]


def test_space_plot_draws_whole_numbers_with_a_gap_on_a_log_axis() -> None:
    """A column of whole numbers with a gap comes as pandas' Int64, whose values are numpy
    integers: they were not counted as numbers, and the axis stayed linear."""
    xs = list(pd.array([128, 8192], dtype="Int64"))
    assert _drawn({"all": (xs, [1.0, 2.0], 2)}).get_xscale() == "log"


def test_space_show_ascending_without_sort_is_refused() -> None:
    """It was ignored in silence: the rows came in the store's order."""
    result = cli("space", "show", SPACE_ID, "--ascending")

    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --ascending orders by --sort: give --sort COLUMN too"


def test_space_show_limit_is_refused_above_what_the_projector_serves() -> None:
    """2,000,000 passed the CLI and was refused by the projector ('a whole number from 0 to
    1,000,000'), in other words than the CLI's own refusal of 0."""
    from discospace.projector.routes import MAX_COUNT

    result = cli("space", "show", SPACE_ID, "--limit", str(MAX_COUNT + 1))

    assert MAX_COUNT == MAX_ROWS
    assert result.exit_code == 2
    assert "--limit" in result.stderr
