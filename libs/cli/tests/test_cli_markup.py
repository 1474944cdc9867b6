"""Data the CLI prints through Rich (reasons, values, names, ids) is never read as markup: a
failure line keeps its ``[...]`` ("property 'model_name' is categorical ()" lost its values)."""

import io
import json
from pathlib import Path

import httpx
import pytest
from rich.console import Console
from typer.testing import CliRunner

import discospace.client
from discospace.cli.description import Catalog, print_description
from discospace.cli.main import app
from discospace.cli.views import table
from discospace.cli.watch import follow
from discospace.client import BestSoFar, OperationCounts, OperationProgress, SpaceSummary
from discospace.core import DiscoverySpace, parse_space_spec

MARKUP = "[bold]x[/bold]"
LIST = "['a', 'b']"
VALUES = "[a100, h100]"
REASON = f"property 'model_name' is categorical ({VALUES}), not {MARKUP} nor {LIST}"

runner = CliRunner()


def _json(data: object) -> httpx.Response:
    return httpx.Response(200, content=json.dumps(data, default=str).encode())


FAILED = OperationProgress(
    operation_id="op-1",
    space_id="space-0123456789ab",
    operator="optuna_tpe",
    status="failed",
    failure_reason=REASON,
)
REJECTED = SpaceSummary(space_id="space-ffffffffffff", status="rejected", reason=REASON)


def projector(request: httpx.Request) -> httpx.Response:
    routes = {
        "/operation": lambda: _json(FAILED.model_dump(mode="json")),
        "/spaces": lambda: _json([REJECTED.model_dump(mode="json")]),
        "/space": lambda: _json(REJECTED.model_dump(mode="json")),
    }
    return routes[request.url.path]()


@pytest.fixture(autouse=True)
def scripted_projector(monkeypatch: pytest.MonkeyPatch) -> None:
    real = discospace.client.Client

    class Scripted(real):  # type: ignore[misc,valid-type]
        def __init__(self, base_url: str | None = None) -> None:
            super().__init__(base_url, transport=httpx.MockTransport(projector))

    monkeypatch.setattr(discospace.client, "Client", Scripted)


def cli(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "300"})


def rendered(*renderables: object) -> str:
    out = io.StringIO()
    console = Console(file=out, width=300)
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue()


def test_a_watched_operation_that_failed_prints_its_reason_with_its_brackets() -> None:
    result = cli("operation", "watch", "op-1", "--interval", "0.05")
    assert result.exit_code == 2
    lines = [line.strip() for line in result.stderr.splitlines()]
    assert f"op-1 failed: {REASON}" in lines
    assert f"error: operation op-1 failed: {REASON}" in lines


def test_the_progress_bar_shows_a_status_and_a_best_property_with_brackets_as_written() -> None:
    best = BestSoFar(property=MARKUP, direction="max", value=1.5, entity_id="e1")
    final = OperationProgress(
        operation_id="op-1", status="completed", counts=OperationCounts(requested=1, measured=1),
        done=1, best=best,
    )  # fmt: skip
    out = io.StringIO()
    follow(lambda: final, 0.1, Console(file=out, width=200), lambda _: None)
    assert f"best {MARKUP}=1.5" in out.getvalue()


def test_space_get_prints_a_rejection_reason_with_its_brackets() -> None:
    listed = cli("space", "get")
    one = cli("space", "get", "space-ffffffffffff")
    assert listed.exit_code == 0, listed.output
    assert f"space-ffffffffffff rejected: {REASON}" in listed.stdout
    assert f"reason: {REASON}" in one.stdout


def test_a_table_keeps_brackets_in_its_title_headers_and_cells() -> None:
    rows = [{MARKUP: VALUES, "reason": LIST}]
    shown = rendered(table(f"Operation op-{MARKUP}", rows))
    for text in (f"Operation op-{MARKUP}", MARKUP, VALUES, LIST):
        assert text in shown


def test_a_space_description_keeps_brackets_in_names_values_and_store() -> None:
    spec = parse_space_spec(
        f"sample_store: '{MARKUP}'\n"
        "entity_space:\n"
        f"  - {{name: '{MARKUP}', values: ['{VALUES}', '[b]']}}\n"
        "measurement_space:\n"
        f"  - {{actuator: '[red]A[/red]', experiment: '{MARKUP}',\n"
        "      parameterization: {k: '[i]'}}\n"
    )
    out = io.StringIO()
    catalog = Catalog(None, "no catalog")
    print_description(DiscoverySpace.from_spec(spec), Console(file=out, width=300), catalog)
    shown = out.getvalue()
    for text in (f"(sample store {MARKUP})", MARKUP, VALUES, "[b]", "[red]A[/red]", "k=[i]"):
        assert text in shown


def test_an_error_naming_a_bracketed_property_prints_it_as_written(tmp_path: Path) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(f"sample_store: s\nentity_space: [{{name: '{MARKUP}'}}]\nmeasurement_space: []")
    result = cli("space", "describe", "-f", str(path))
    assert result.exit_code == 2
    assert f"property '{MARKUP}' has no values and no range" in result.stderr


def test_a_whole_number_in_a_column_with_gaps_prints_whole_and_others_to_ten_digits() -> None:
    from discospace.cli.views import cell

    assert str(cell(85_899_345_920.0)) == "85899345920"  # bytes, in a float column with a NaN
    assert str(cell(1234.56789)) == "1234.56789"
    # two energies six digits made one figure: a table sorted by them looked unsorted
    assert str(cell(2345678.2)) != str(cell(2345681.9))
    assert str(cell(0.1 + 0.2)) == "0.3"
    assert str(cell(1234567890123.5)) == "1.23456789e+12"
    assert str(cell(float("nan"))) == "-"


ESCAPES = "x\x1b[31mRED\x1b]0;pwned\x07 tab\tkept"


def test_control_characters_in_data_are_printed_never_obeyed() -> None:
    """A name or reason someone else submitted reached everyone's terminal as ESC sequences
    (a colour, a new window title): they are written out as escapes."""
    from discospace.cli.errors import user_error_line
    from discospace.cli.views import print_line

    out = io.StringIO()
    console = Console(file=out, width=300)
    print_line(console, f"space-1 rejected: {ESCAPES}")
    console.print(table("Spaces", [{"reason": ESCAPES}]))
    line = user_error_line(ValueError(f"experiment '{ESCAPES}' is not in the catalog"))

    for shown in (out.getvalue(), line):
        assert "\x1b" not in shown
        assert "\x07" not in shown
        assert "x\\x1b[31mRED\\x1b]0;pwned\\x07" in shown


def test_control_characters_in_a_space_description_and_a_pipelines_board_are_written_out() -> None:
    """`space describe` / `space get` and the pipeline watch board built their text without
    `printable`: ESC in someone else's categorical value or a hook's reason reached the
    terminal."""
    from discospace.cli.watch import follow
    from discospace.client.models import PipelineJob

    spec = parse_space_spec(
        "sample_store: s\n"
        "entity_space:\n"
        '  - {name: model, values: ["a\\e[31mred", b]}\n'
        "measurement_space:\n"
        "  - {actuator: A, experiment: e}\n"
    )
    out = io.StringIO()
    print_description(
        DiscoverySpace.from_spec(spec), Console(file=out, width=300), Catalog(None, "-")
    )
    failed = PipelineJob(stage="refine", job="pick", status="failed", reason=f"hook said {ESCAPES}")
    board = FAILED.model_copy(
        update={"operator": "pipeline", "jobs": [failed], "failure_reason": ""}
    )
    follow(lambda: board, 0.5, Console(file=out, width=300), lambda _: None)

    shown = out.getvalue()
    assert "\x1b" not in shown
    assert "a\\x1b[31mred" in shown
    assert "hook said x\\x1b[31mRED" in shown
