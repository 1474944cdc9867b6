"""``discospace store import``: checked before anything is published, counted in a summary, and
on the real broker idempotent (the same file twice publishes its results once)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discospace.cli.errors import CliError
from discospace.cli.import_report import Progress
from discospace.cli.import_rows import ImportTarget
from discospace.cli.import_table import read_table
from discospace.cli.main import app
from discospace.cli.store_import import ImportRequest, _needle, run_import
from discospace.events import MeasurementCompleted, SpaceRegistered, TopicNames, decode
from discospace.testing.clients import EventClient
from discospace.testing.kafka import free_port

runner = CliRunner()
Registered = Callable[..., SpaceRegistered]
HEADER = "batch_size,model_name,throughput,is_valid,invalid_reason\n"
ROWS = "1,llama-7b,10,,\n2,llama-7b,20,,\n8,llama-7b,,false,CUDA out of memory\n"


class FakeLink:
    """The spaces and measurements topics, in memory."""

    def __init__(self, space: SpaceRegistered, held: set[str] | None = None) -> None:
        self.space = space
        self.stored = held or set()
        self.published: list[tuple[bytes, bytes]] = []

    async def registration(self, space_id: str) -> SpaceRegistered:
        if space_id != self.space.space_id:
            raise CliError(f"space {space_id} is not registered")
        return self.space

    async def held(self, target: ImportTarget) -> set[str]:
        return self.stored

    async def publish(self, messages: Sequence[tuple[bytes, bytes]]) -> None:
        self.published += messages
        for _, value in messages:
            event = decode(value)
            assert isinstance(event, MeasurementCompleted)
            self.stored.add(event.entity_id)


def write(tmp_path: Path, text: str, name: str = "runs.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(link: FakeLink, path: Path, dry_run: bool = False, **request: object):
    wanted = ImportRequest(link.space.space_id, **request)  # type: ignore[arg-type]
    return asyncio.run(run_import(link, read_table(path), wanted, dry_run))


def test_an_import_publishes_one_result_per_row_and_counts_them(
    tmp_path: Path, registered: Registered
) -> None:
    link = FakeLink(registered())

    summary = run(link, write(tmp_path, HEADER + ROWS), note="from the March runs")

    assert (summary.rows_read, summary.imported, summary.already_in_store) == (3, 3, 0)
    assert (summary.imported_valid, summary.imported_invalid, summary.refused) == (2, 1, 0)
    events = [decode(value) for _, value in link.published]
    assert all(isinstance(e, MeasurementCompleted) for e in events)
    assert {
        e.provenance.note for e in events if isinstance(e, MeasurementCompleted) and e.provenance
    } == {"from the March runs"}


def test_importing_the_same_file_again_publishes_nothing(
    tmp_path: Path, registered: Registered
) -> None:
    link = FakeLink(registered())
    path = write(tmp_path, HEADER + ROWS)

    run(link, path)
    again = run(link, path)

    assert (again.imported, again.already_in_store) == (0, 3)
    assert len(link.published) == 3


def test_a_dry_run_reads_and_counts_everything_and_publishes_nothing(
    tmp_path: Path, registered: Registered
) -> None:
    link = FakeLink(registered())

    summary = run(link, write(tmp_path, HEADER + ROWS), dry_run=True)

    assert summary.imported == 3
    assert link.published == []
    assert summary.lines()[0].startswith("Would import runs.csv")
    assert summary.lines()[-1] == "Dry run: nothing was published."


def test_one_bad_row_stops_the_import_before_anything_is_published(
    tmp_path: Path, registered: Registered
) -> None:
    link = FakeLink(registered())
    path = write(tmp_path, HEADER + ROWS + "3,llama-7b,30,,\n5,llama-7b,50,,\n")

    with pytest.raises(CliError) as refused:
        run(link, path)

    assert link.published == []
    message = str(refused.value)
    assert message.startswith(f"row 4 is not an entity of space {link.space.space_id}: ")
    assert "(1 more row cannot be imported either); nothing was imported" in message
    assert message.endswith("--skip-invalid-rows to import the other rows")


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_row_too_large_for_a_message_stops_the_import_before_anything_is_published(
    tmp_path: Path, registered: Registered, dry_run: bool
) -> None:
    link = FakeLink(registered())
    # a column of text only (as a log would be), so the cell is a value, not a refused row
    path = write(tmp_path, HEADER + f"1,llama-7b,short,,\n2,llama-7b,{'x' * 1_100_000},,\n")

    with pytest.raises(CliError) as refused:
        run(link, path, dry_run=dry_run)

    assert link.published == []
    assert str(refused.value).startswith("row 2: its result would be a message of ")
    assert str(refused.value).endswith(
        "-byte limit of a message; nothing was imported: shorten its cells"
    )


def test_skip_invalid_rows_imports_the_others_and_counts_the_refused(
    tmp_path: Path, registered: Registered
) -> None:
    link = FakeLink(registered())
    path = write(tmp_path, HEADER + ROWS + "3,llama-7b,30,,\n")

    summary = run(link, path, skip_invalid_rows=True)

    assert (summary.imported, summary.refused) == (3, 1)
    assert summary.refused_rows[0]["row"] == 4
    assert any(line.strip().startswith("row 4 is not an entity") for line in summary.lines())


def test_skipping_every_row_is_no_import(tmp_path: Path, registered: Registered) -> None:
    """It printed 'Imported 0' and exited 0, as if the file had been imported."""
    link = FakeLink(registered())
    path = write(tmp_path, HEADER + "3,llama-7b,30,,\n5,llama-7b,50,,\n")

    with pytest.raises(CliError) as refused:
        run(link, path, skip_invalid_rows=True)

    assert link.published == []
    assert str(refused.value).startswith("none of the 2 rows can be imported (row 1 is not an")


def test_the_summary_names_what_it_read_did_and_ignored(
    tmp_path: Path, registered: Registered
) -> None:
    link = FakeLink(registered())
    path = write(tmp_path, "batch_size,model_name,throughput,notes\n1,llama-7b,1,x\n")
    link.stored.add(next(iter(_entity_ids(link, path))))

    lines = run(link, path).lines()

    assert lines[0].startswith("Imported runs.csv into sample store store-a as benchmark")
    assert "  rows read            1" in lines
    assert "  imported             0 (0 valid, 0 invalid)" in lines
    assert "  already in the store 1" in lines
    assert "  ignored columns      notes" in lines


def _entity_ids(link: FakeLink, path: Path) -> set[str]:
    probe = FakeLink(link.space)
    run(probe, path)
    return set(probe.stored)


def test_progress_shows_a_line_only_once_the_work_takes_a_while() -> None:
    quick, slow = io.StringIO(), io.StringIO()
    Progress("publishing", interval_s=60, stream=quick).update(10, 100)
    Progress("publishing", interval_s=0, stream=slow).update(10, 100)
    assert quick.getvalue() == ""
    assert slow.getvalue() == "publishing: 10/100 (10%)\n"


def cli(*args: str, kafka: str = "127.0.0.1:9", prefix: str = "discospace"):
    return runner.invoke(app, ["--kafka", kafka, "--topic-prefix", prefix, *args])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("missing.csv", "--space", "space-x"), "missing.csv: no such file"),
        (("runs.txt", "--space", "space-x"), "not a file this command reads"),
        (("runs.csv", "--space", "space-x", "--map", "bs"), "is not FILE_COLUMN=PROPERTY"),
    ],
)
def test_a_bad_file_or_option_is_one_line_and_exit_2_before_kafka(
    tmp_path: Path, args: tuple[str, ...], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, HEADER + ROWS, "runs.csv")
    write(tmp_path, HEADER + ROWS, "runs.txt")

    result = cli("store", "import", *args)

    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert message in line


def test_kafka_not_answering_is_one_line(tmp_path: Path) -> None:
    broker = f"127.0.0.1:{free_port()}"
    path = write(tmp_path, HEADER + ROWS)

    result = cli("store", "import", str(path), "--space", "space-x", kafka=broker)

    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: Kafka at {broker} is not answering: start it with `make up` "
        "or set KAFKA_BOOTSTRAP_SERVERS"
    )


@pytest.mark.integration
def test_on_the_broker_a_file_is_imported_once_and_an_unknown_space_is_refused(
    kafka_bootstrap: str, tmp_path: Path, registered: Registered
) -> None:
    topics = TopicNames.unique("cli-import")
    space = registered("store-import-test")
    asyncio.run(EventClient(kafka_bootstrap).publish(space, topics=topics))
    path = write(tmp_path, HEADER + ROWS)
    args = ("store", "import", str(path), "--space", space.space_id, "--json")

    unknown = cli(
        "store",
        "import",
        str(path),
        "--space",
        "space-nope",
        kafka=kafka_bootstrap,
        prefix=topics.prefix,
    )
    dry = cli(*args, "--dry-run", kafka=kafka_bootstrap, prefix=topics.prefix)
    first = cli(*args, "--note", "bench rig", kafka=kafka_bootstrap, prefix=topics.prefix)
    second = cli(*args, kafka=kafka_bootstrap, prefix=topics.prefix)

    assert unknown.exit_code == 2
    assert "space space-nope is not registered" in unknown.stderr
    assert (dry.exit_code, first.exit_code, second.exit_code) == (0, 0, 0), first.stderr
    assert json.loads(dry.stdout)["imported"] == 3
    assert (json.loads(first.stdout)["imported"], json.loads(first.stdout)["dry_run"]) == (3, False)
    assert json.loads(second.stdout)["imported"] == 0
    assert json.loads(second.stdout)["already_in_store"] == 3
    stored = asyncio.run(EventClient(kafka_bootstrap).read_all(topics.measurements))
    events = [decode(record.value) for record in stored]
    assert len(events) == 3
    assert all(isinstance(e, MeasurementCompleted) and e.provenance for e in events)


@pytest.mark.parametrize("store", ["fms-a100", "größe/ü", 'quoted "store"', "back\\slash", "tab\t"])
def test_the_store_filter_never_passes_over_an_event_of_the_store(
    store: str, registered: Registered, tmp_path: Path
) -> None:
    link = FakeLink(registered(store))
    run(link, write(tmp_path, HEADER + ROWS))

    assert all(_needle(store) in value for _, value in link.published)
    assert (_needle(store) == b"") == (store in ('quoted "store"', "back\\slash", "tab\t"))
