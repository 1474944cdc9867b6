"""Printing what the projector returns: rows as a Rich table, or as JSON.

Titles, headers and cells are ``Text`` so that values such as ``[a, b]`` are never read as Rich
markup; missing values print as ``-``. Lines of data (a reason, an id) go through
:func:`print_line`, which prints them as written.
"""

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

Row = Mapping[str, Any]
PROSE = frozenset({"reason", "value", "experiments", "workers", "result"})
"""Columns that wrap to fit the terminal; the others (ids, names, numbers) stay on one line."""


def plain(value: Any) -> Any:
    """``value`` as JSON data: models dumped, NaN as None."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with its control characters written as escapes (ESC as `\\x1b`): a name or a
    reason someone else submitted is printed, never obeyed by the terminal (a colour, a title,
    a cursor move). Tabs and line ends are kept."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def plain_text(text: str) -> Text:
    """Text as Rich prints it: never markup, its control characters written out (`printable`)."""
    return Text(printable(text))


def cell(value: Any) -> Text:
    """One table cell: ``-`` for nothing, numbers as written, the rest as plain text."""
    value = plain(value)
    if value is None:
        return Text("-", style="dim")
    if isinstance(value, datetime):
        return Text(value.strftime("%Y-%m-%d %H:%M"))
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:  # a whole number in a column with gaps
            return Text(str(int(value)))
        return Text(number_text(value))
    if isinstance(value, Mapping):
        return plain_text(", ".join(f"{k}={v}" for k, v in value.items()))
    if isinstance(value, list):
        return plain_text(", ".join(str(v) for v in value))
    return plain_text(str(value))


def natural_key(value: Any) -> tuple[int, float, str] | None:
    """A sort key for a column of mixed values, which the projector sends as text (`8`, `64`,
    `auto`): numbers by their value, then text; nothing stays nothing (sorted last)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return (1, 0.0, str(value))
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


NUMBER_DIGITS = 10
"""Significant digits of a real number in a table or a line (6 made 2345678.2 and 2345681.9 one
figure, so a table sorted by it looked unsorted); `--format csv` gives every digit."""


def number_text(value: float) -> str:
    """A real number to `NUMBER_DIGITS` significant digits (0.1 + 0.2 shows as 0.3)."""
    return f"{value:.{NUMBER_DIGITS}g}"


def table(
    title: str, rows: Sequence[Row], columns: Iterable[str] | None = None, counted: bool = True
) -> Table:
    """A table with one row per mapping; columns default to the keys of the first row.

    ``counted`` adds the number of rows to the title (a list of things, not a record's fields).
    """
    names = list(columns) if columns is not None else list(rows[0]) if rows else []
    heading = f"{title} ({len(rows)})" if counted else title
    result = Table(title=Text(heading), title_justify="left")
    for name in names:
        result.add_column(Text(name), overflow="fold", no_wrap=name not in PROSE)
    for row in rows:
        result.add_row(*(cell(row.get(name)) for name in names))
    return result


def print_table(
    title: str, rows: Sequence[Row], columns: Iterable[str] | None = None, counted: bool = True
) -> None:
    print_wide(table(title, rows, columns, counted))


def print_line(console: Console, line: str) -> None:
    """One line of data, printed as written: no markup (``[a100, h100]`` stays), no colouring."""
    console.print(printable(line), markup=False, highlight=False, soft_wrap=True)


def print_wide(rendered: Table, console: Console | None = None) -> None:
    """Print a table at its natural width, wider than the terminal if it must be: a value is
    never folded inside its cell (a terminal wraps the long lines; a file keeps them whole)."""
    console = console or Console()
    natural = Measurement.get(console, console.options.update_width(10**6), rendered).maximum
    if natural > console.width:
        console = Console(file=console.file, width=natural)
    console.print(rendered)


def print_json(data: Any) -> None:
    typer.echo(json.dumps(plain(data), indent=2, default=str))
