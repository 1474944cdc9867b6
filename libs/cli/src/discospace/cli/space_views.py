"""``space get`` and ``space show``: the projector's views of registered spaces.

``get`` lists the spaces, or describes one (status, then its properties and experiments);
``show`` prints a space's entities as a table, or exports them (CSV, JSON, Parquet) to a file
or stdout.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from discospace.cli.description import Catalog, print_description
from discospace.cli.errors import CliError
from discospace.cli.projector import projector_client
from discospace.cli.settings import settings_of
from discospace.cli.views import natural_key, plain, print_json, print_line, print_wide, table
from discospace.core.discovery import DiscoverySpace
from discospace.core.experiment import ExperimentCatalog

if TYPE_CHECKING:
    import pandas as pd

    from discospace.client import Client, SpaceDetail, SpaceSummary


class Include(StrEnum):
    """Which entities of the space a view holds."""

    measured = "measured"
    elsewhere = "elsewhere"
    unmeasured = "unmeasured"
    unsampled = "unsampled"
    all = "all"


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


SPACE_COLUMNS = ("space_id", "status", "sample_store", "size", "registered_at")
JsonOption = Annotated[bool, typer.Option("--json", help="Print as JSON.")]


def get(
    ctx: typer.Context,
    space_id: Annotated[
        str | None, typer.Argument(help="One space to describe; every space when left out.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the spaces the projector knows, or describe one registered space."""
    with projector_client(settings_of(ctx)) as client:
        found = client.space(space_id) if space_id else client.spaces()
    if as_json:
        print_json(found)
    elif isinstance(found, list):
        _list(found, Console())
    else:
        _describe(found, Console())


def list_spaces(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the spaces the projector knows: id, status, sample store, size, when registered
    (`space get` without an id)."""
    get(ctx, None, as_json)


def _list(spaces: "list[SpaceSummary]", console: Console) -> None:
    """The spaces as a table; the reason of each rejection below it, on its own lines."""
    rows = [space.model_dump() | {"space_id": _name(space)} for space in spaces]
    print_wide(table("Spaces", rows, SPACE_COLUMNS), console)
    for space in spaces:
        if space.reason:
            print_line(console, f"{_name(space)} {space.status}: {space.reason}")


def _name(space: "SpaceSummary") -> str:
    """The space's id; a submission refused before it had one is named by its submission."""
    if space.space_id:
        return space.space_id
    return f"submission {', '.join(space.submission_ids) or '?'}"


def _describe(detail: "SpaceDetail", console: Console) -> None:
    print_line(console, f"Space {detail.space_id}: {detail.status}")
    if detail.reason:
        print_line(console, f"reason: {detail.reason}")
    if detail.spec is not None:
        catalog = Catalog(ExperimentCatalog(detail.experiments), "the registry's catalog")
        print_description(DiscoverySpace.from_spec(detail.spec), console, catalog)


@contextmanager
def _writing(output: Path) -> Iterator[None]:
    """A file that cannot be written (no such folder, a directory, no permission) is one
    sentence naming it."""
    try:
        yield
    except OSError as error:
        raise CliError(f"cannot write {output}: {error.strerror or error}") from None


def _write(data: bytes, output: Path | None, fmt: Format) -> None:
    if output is not None:
        with _writing(output):
            output.write_bytes(data)
        return
    if fmt is Format.parquet and sys.stdout.isatty():
        raise CliError("Parquet is binary: give -o FILE, or redirect stdout to a file")
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


MAX_ROWS = 1_000_000
"""The most rows the projector serves at once (its `MAX_COUNT`)."""


def show(
    ctx: typer.Context,
    space_id: Annotated[str, typer.Argument(help="The space id (space-...).", show_default=False)],
    include: Annotated[Include, typer.Option("--include", help="Which entities.")] = Include.all,
    fmt: Annotated[Format, typer.Option("--format", help="How to print them.")] = Format.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, max=MAX_ROWS, help="At most this many rows."),
    ] = None,
    sort: Annotated[
        str | None,
        typer.Option("--sort", help="Order the table by this column, largest first."),
    ] = None,
    ascending: Annotated[
        bool, typer.Option("--ascending", help="With --sort: smallest first.")
    ] = False,
) -> None:
    """Show a space's entities: one column per constitutive and per observed property."""
    if sort is not None and fmt is not Format.table:
        raise CliError("--sort orders the table format; exports keep the store's order")
    if ascending and sort is None:
        raise CliError("--ascending orders by --sort: give --sort COLUMN too")
    with projector_client(settings_of(ctx)) as client:
        if fmt is not Format.table:
            _write(client.export(space_id, include.value, fmt.value, limit), output, fmt)
            return
        # sorted, the limit keeps the first rows of the order, so every row is read first
        frame = client.entities(space_id, include.value, None if sort else limit)
        cut = _unsampled_cut(client, space_id, frame) if sort is not None else None
    if sort is not None:
        frame = _sorted(frame, sort, ascending)
        frame = frame if limit is None else frame.head(limit)
    if cut is not None:  # said, not sorted in silence among part of the space
        typer.echo(
            f"note: sorted among the first {cut:,} never-sampled entities (in grid order), the "
            "ones the projector lists without a limit, not all of them; every sampled entity "
            "is here",
            err=True,
        )
    title = f"Space {space_id}: {include.value} entities"
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    rendered = table(title, plain(rows), [str(c) for c in frame.columns])
    if output is None:
        print_wide(rendered)
        return
    with _writing(output), output.open("w", encoding="utf-8") as handle:
        print_wide(rendered, Console(file=handle))


def _unsampled_cut(client: "Client", space_id: str, frame: "pd.DataFrame") -> int | None:
    """How many never-sampled rows `frame` holds when the space has more of them (the projector
    lists them lazily, up to a limit, when none is given); None when it holds them all."""
    if "status" not in frame.columns:
        return None
    listed = int((frame["status"] == "unsampled").sum())
    if listed == 0:
        return None
    more = client.entities(space_id, "unsampled", listed + 1)
    return listed if len(more) > listed else None


def _sorted(frame: "pd.DataFrame", column: str, ascending: bool) -> "pd.DataFrame":
    """The rows ordered by `column` (missing values last), or a one-line error naming it."""
    if column not in frame.columns:
        known = ", ".join(str(c) for c in frame.columns)
        raise CliError(f"no column {column!r} to sort by; the columns are: {known}")
    from pandas.api.types import is_numeric_dtype

    numeric = is_numeric_dtype(frame[column])
    key = None if numeric else (lambda values: values.map(natural_key))
    return frame.sort_values(
        column, ascending=ascending, na_position="last", kind="stable", key=key
    )
