"""``discospace store import FILE --space SPACE_ID``: measurements made elsewhere, into a store.

The command never writes the store: it publishes one ``MeasurementCompleted`` per row on the
measurements topic, as an actuator would (``worker_id`` ``store-import``, the row's provenance in
``provenance``), so the projector's views, the sampler's memo and the explorer's warm starts see
them like any other result, in every space that shares the store.

In order, and nothing is published until the last step:

1. read the file (CSV or Parquet) and its SHA-256 (``import_table``);
2. read the space's registration from the spaces topic, as the sampler does, and find the
   experiment (``import_rows.import_target``);
3. plan the columns and read every row; a bad row stops the import with its number, unless
   ``--skip-invalid-rows`` (``import_rows.map_rows``);
4. read what the sample store already holds for that experiment from the measurements topic
   (the sampler's memo is the same fold): those rows are left out, so importing a file twice
   publishes nothing the second time;
5. build every event, then publish them (``--dry-run`` stops before), with a progress line on
   stderr when it takes more than a second; then a summary (``--json`` for a document).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Protocol

import typer
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaError

from discospace.cli.errors import CliError, KafkaUnavailableError
from discospace.cli.import_report import ImportSummary, Progress
from discospace.cli.import_rows import (
    ImportSource,
    ImportTarget,
    MappedRows,
    RowResult,
    completed_event,
    import_id,
    import_target,
    map_rows,
    split_stored,
)
from discospace.cli.import_table import (
    ColumnPlan,
    Table,
    parse_renames,
    plan_columns,
    read_table,
)
from discospace.cli.kafka import REQUEST_TIMEOUT_MS, ensure_topics, refuse_login
from discospace.cli.settings import CliSettings, settings_of
from discospace.cli.views import print_json, printable
from discospace.events import (
    EventDecodeError,
    EventTooLargeError,
    MeasurementCompleted,
    SpaceRegistered,
    decode,
    encode_within,
    utc_now,
)
from discospace.runtime.replay import Record, existing_partitions, read_up_to, reader
from discospace.runtime.security import client_kwargs

CLIENT_ID = "discospace-cli-store-import"
PUBLISH_BATCH = 500

store_app = typer.Typer(
    rich_markup_mode=None,
    help="Sample stores: import measurements made elsewhere into a store.",
    no_args_is_help=True,
)


@store_app.command("import")
def import_measurements(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            help="CSV (.csv, .tsv, optionally .gz) or Parquet (.parquet, .pq) file, one row per "
            "measured entity.",
            show_default=False,
        ),
    ],
    space_id: Annotated[
        str,
        typer.Option(
            "--space", help="The registered space whose entities the rows are.", show_default=False
        ),
    ],
    experiment: Annotated[
        str | None,
        typer.Option(
            "--experiment",
            help="The space's experiment the rows are measurements of (its parameterized id, or "
            "its name); optional when the space has one experiment.",
            show_default=False,
        ),
    ] = None,
    renames: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="FILE_COLUMN=PROPERTY: the column gives that constitutive or target property "
            "(or is_valid, invalid_reason, duration_seconds); repeat it for each column.",
            show_default=False,
        ),
    ] = None,
    note: Annotated[
        str, typer.Option("--note", help="Where the data comes from, kept with every result.")
    ] = "",
    skip_invalid_rows: Annotated[
        bool,
        typer.Option(
            "--skip-invalid-rows", help="Import the other rows when some cannot be imported."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Read and check everything, publish nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Import measurements made elsewhere into the space's sample store, as results of one of
    its experiments: every space sharing the store reuses them instead of measuring again."""
    table = read_table(file)
    settings = settings_of(ctx)
    request = ImportRequest(
        space_id=space_id,
        experiment=experiment,
        renames=parse_renames(renames or ()),
        note=note,
        imported_by=settings.user,
        skip_invalid_rows=skip_invalid_rows,
    )
    summary = asyncio.run(run_import(KafkaStoreLink(settings), table, request, dry_run))
    if as_json:
        print_json(asdict(summary))
        return
    for line in summary.lines():
        typer.echo(printable(line))  # refused rows' reasons quote the file's cells


@dataclass(frozen=True)
class ImportRequest:
    """What the user asked to import the file as."""

    space_id: str
    experiment: str | None = None
    renames: dict[str, str] = field(default_factory=dict)
    note: str = ""
    imported_by: str = "cli"
    skip_invalid_rows: bool = False


class StoreLink(Protocol):
    """What an import reads and publishes: Kafka (:class:`KafkaStoreLink`), or a fake."""

    async def registration(self, space_id: str) -> SpaceRegistered:
        """The space's registration; a :class:`CliError` when it is not registered."""

    async def held(self, target: ImportTarget) -> set[str]:
        """Ids of the entities the target's store holds a result of its experiment for."""

    async def publish(self, messages: Sequence[tuple[bytes, bytes]]) -> None:
        """Publish (key, value) pairs on the measurements topic."""


async def run_import(
    link: StoreLink, table: Table, request: ImportRequest, dry_run: bool = False
) -> ImportSummary:
    """Steps 2 to 5 of the module docstring, for a file already read."""
    target = import_target(await link.registration(request.space_id), request.experiment)
    plan, mapped = _read_rows(table, target, request)
    new, held = split_stored(mapped.results, await link.held(target))
    source = ImportSource(table.name, table.sha256, request.note, request.imported_by)
    messages = _messages(new, target, source)
    if not dry_run and messages:
        await link.publish(messages)
    return ImportSummary(
        file=table.name,
        sha256=table.sha256,
        space_id=target.space_id,
        sample_store=target.sample_store,
        experiment_id=target.experiment_id,
        import_id=import_id(target, table.sha256),
        dry_run=dry_run,
        rows_read=len(table.frame),
        imported=len(new),
        imported_valid=sum(result.is_valid for result in new),
        imported_invalid=sum(not result.is_valid for result in new),
        already_in_store=len(held),
        refused=len(mapped.refused),
        refused_rows=[{"row": r.row, "reason": r.reason} for r in mapped.refused],
        ignored_columns=list(plan.ignored),
    )


def _read_rows(
    table: Table, target: ImportTarget, request: ImportRequest
) -> tuple[ColumnPlan, MappedRows]:
    """The file's columns and rows, read for the target; a refused row stops here unless the
    request skips them."""
    columns = [str(column) for column in table.frame.columns]
    names, experiment_id = target.entity_space.names, target.experiment_id
    plan = plan_columns(columns, names, target.targets, experiment_id, request.renames)
    progress = Progress(f"reading {table.name}")
    mapped = map_rows(
        table.frame, plan, target, lambda n: progress.update(n, len(table.frame)), table.typed
    )
    progress.close()
    if mapped.refused and not request.skip_invalid_rows:
        raise CliError(_refusal_sentence(mapped))
    if mapped.refused and not mapped.results:  # skipping every row is no import
        first, rows = mapped.refused[0], len(mapped.refused)
        raise CliError(
            f"none of the {rows} rows can be imported ({first.reason}); nothing was imported: "
            "is it the space's table, with its columns?"
        )
    return plan, mapped


def _refusal_sentence(mapped: MappedRows) -> str:
    first, others = mapped.refused[0], len(mapped.refused) - 1
    more = f" ({others} more row{'s' if others > 1 else ''} cannot be imported either)"
    return (
        f"{first.reason}{more if others else ''}; nothing was imported: fix the file, or give "
        "--skip-invalid-rows to import the other rows"
    )


def _messages(
    results: Sequence[RowResult], target: ImportTarget, source: ImportSource
) -> list[tuple[bytes, bytes]]:
    """Every result's event as (key, value), all built (so checked) before one is published."""
    now, messages = utc_now(), []
    progress = Progress("preparing the results")
    for result in results:
        event = completed_event(result, target, source, now)
        try:
            messages.append((event.key(), encode_within(event)))
        except EventTooLargeError as error:
            progress.close()
            note = len(source.note.encode("utf-8"))
            blamed = (
                f"shorten --note ({note} bytes, in every row's result)"
                if note > error.limit // 2
                else "shorten its cells"
            )
            raise CliError(
                f"row {result.row}: its result would be a message of {error.size} bytes, over "
                f"the {error.limit}-byte limit of a message; nothing was imported: {blamed}"
            ) from None
        progress.update(len(messages), len(results))
    progress.close()
    return messages


# -- Kafka ---------------------------------------------------------------------------------------


class KafkaStoreLink:
    """The spaces and measurements topics, read from the beginning and published to."""

    def __init__(self, settings: CliSettings) -> None:
        self.settings = settings

    async def registration(self, space_id: str) -> SpaceRegistered:
        """The registry's registration of ``space_id``, read from the spaces topic."""
        found: list[SpaceRegistered] = []

        needle = _needle(space_id)

        def take(value: bytes) -> None:
            if not found and b'"SpaceRegistered"' in value and needle in value:
                event = _decoded(value)
                if isinstance(event, SpaceRegistered) and event.space_id == space_id:
                    found.append(event)

        await self._read(self.settings.topics.spaces, take)
        if not found:
            raise CliError(
                f"space {space_id} is not registered; register it with `discospace space "
                "create -f FILE`, or list the spaces with `discospace space get`"
            )
        return found[0]

    async def held(self, target: ImportTarget) -> set[str]:
        """Entities the target's store holds a result of its experiment for: the entity ids of
        its ``MeasurementCompleted`` events, valid or not (the sampler's memo folds the same)."""
        held: set[str] = set()
        progress = Progress(f"reading sample store {target.sample_store}")
        needle, read = _needle(target.sample_store), 0

        def take(value: bytes) -> None:
            nonlocal read
            read += 1
            progress.update(read)
            if b'"MeasurementCompleted"' not in value or needle not in value:
                return
            event = _decoded(value)
            if (
                isinstance(event, MeasurementCompleted)
                and event.sample_store == target.sample_store
                and event.experiment_id == target.experiment_id
            ):
                held.add(event.entity_id)

        try:
            await self._read(self.settings.topics.measurements, take)
        finally:
            progress.close()
        return held

    async def _read(self, topic: str, take: Callable[[bytes], None]) -> None:
        """Hand ``take`` every message of ``topic`` up to where it ends now (none if absent)."""
        bootstrap = self.settings.bootstrap

        async def take_record(record: Record) -> None:
            take(record.value or b"")

        try:
            partitions = await existing_partitions(bootstrap, [topic])
            if not partitions:
                return
            async with reader(bootstrap, CLIENT_ID) as consumer:
                ends = await consumer.end_offsets(partitions)
                await read_up_to(consumer, ends, take_record)
        except KafkaConnectionError:
            await refuse_login(bootstrap)
            raise KafkaUnavailableError(bootstrap) from None
        except KafkaError as error:
            raise CliError(f"Kafka at {bootstrap} could not be read ({error})") from None

    async def publish(self, messages: Sequence[tuple[bytes, bytes]]) -> None:
        """Publish on the measurements topic, waiting for the broker to have each batch, with a
        progress line when it takes a while."""
        bootstrap, topics = self.settings.bootstrap, self.settings.topics
        await ensure_topics(bootstrap, topics, [topics.measurements])
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=20,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            client_id=CLIENT_ID,
            **client_kwargs(),
        )
        progress = Progress("publishing")
        try:
            await producer.start()
            for start in range(0, len(messages), PUBLISH_BATCH):
                batch = messages[start : start + PUBLISH_BATCH]
                sent = [await producer.send(topics.measurements, v, key=k) for k, v in batch]
                await asyncio.gather(*sent)
                progress.update(start + len(batch), len(messages))
        except KafkaConnectionError:
            await refuse_login(bootstrap)
            raise KafkaUnavailableError(bootstrap) from None
        except KafkaError as error:
            raise CliError(
                f"Kafka did not take every result on {topics.measurements} ({error}); importing "
                "the file again publishes only what is missing"
            ) from None
        finally:
            progress.close()
            await producer.stop()


def _needle(text: str) -> bytes:
    """Bytes that any event naming ``text`` holds, to pass over the others without decoding
    them (empty, so nothing is passed over, for text that JSON would write escaped)."""
    return text.encode() if json.dumps(text, ensure_ascii=False) == f'"{text}"' else b""


def _decoded(value: bytes) -> object:
    try:
        return decode(value)
    except EventDecodeError:
        return None  # the services dead-letter it; it holds nothing this import needs
