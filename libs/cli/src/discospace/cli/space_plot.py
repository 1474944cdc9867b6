"""``discospace space plot SPACE_ID --x COL --y COL [--line COL] -o FILE.png``.

One measured value against one property over a space's validly measured entities, one line
per value of another property (tokens per second against batch size, one line per model size).
Entities that share x and line values (other properties differ) are averaged, and the count is
said in the legend. The x axis is logarithmic when its values are positive and span 16x or more.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from discospace.cli.errors import CliError
from discospace.cli.plot import FORMATS, save_figure
from discospace.cli.projector import projector_client
from discospace.cli.settings import settings_of
from discospace.cli.views import natural_key

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

LOG_SPAN = 16


def plot(
    ctx: typer.Context,
    space_id: Annotated[str, typer.Argument(help="The space id (space-...).", show_default=False)],
    x: Annotated[str, typer.Option("--x", help="Property on the x axis.", show_default=False)],
    y: Annotated[
        str, typer.Option("--y", help="Measured value on the y axis.", show_default=False)
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Picture to write (.png, .svg or .pdf).", show_default=False
        ),
    ],
    line: Annotated[
        str | None, typer.Option("--line", help="One line per value of this property.")
    ] = None,
) -> None:
    """Plot a measured value against a property, one line per value of another property."""
    if output.suffix.lower() not in FORMATS:
        raise CliError(f"the plot file must end in {', '.join(FORMATS)}, not '{output.name}'")
    with projector_client(settings_of(ctx)) as client:
        frame = client.entities(space_id, "measured", None)
    series = lines(frame, x, y, line)
    typer.echo(str(save_figure(_drawing(series, x, y, line), f"{space_id}: {y}", output)))
    drawn = sum(count for _, _, count in series.values())
    measured = _measured(frame, y)
    if drawn < measured:  # said, not silently dropped
        typer.echo(
            f"{measured - drawn} of the {measured} entities with a value of {y!r} are not "
            f"drawn: they have no value of {x!r}{f' or {line!r}' if line else ''}, or an "
            "infinite one",
            err=True,
        )


def _measured(frame: pd.DataFrame, y: str) -> int:
    """Entities with a value of `y` (what `lines` starts from)."""
    return int(frame[y].notna().sum()) if y in frame.columns else 0


def lines(
    frame: pd.DataFrame, x: str, y: str, line: str | None
) -> dict[str, tuple[list[float], list[float], int]]:
    """Per line label: the x values (sorted), the mean y at each, and how many entities."""
    missing = [c for c in (x, y, line) if c is not None and c not in frame.columns]
    if missing:
        known = ", ".join(str(c) for c in frame.columns)
        raise CliError(f"no column {missing[0]!r} in the space's table; the columns are: {known}")
    import pandas as pd  # here: the other commands start without pandas
    from pandas.api.types import is_numeric_dtype

    rows = frame.dropna(subset=[y])
    numbers = pd.to_numeric(rows[y], errors="coerce")
    if numbers.isna().any():
        raise CliError(f"column {y!r} holds values that are not numbers; give --y a numeric column")
    rows = rows.assign(**{y: numbers})[numbers.abs() != float("inf")]  # nothing to draw
    if x in rows.columns and not is_numeric_dtype(rows[x]):  # numbers the projector sent as text
        as_numbers = pd.to_numeric(rows[x], errors="coerce")
        if as_numbers.notna().sum() == rows[x].notna().sum() and _kept_apart(rows[x], as_numbers):
            rows = rows.assign(**{x: as_numbers})
    if rows.empty:
        raise CliError(f"no measured entity has a value for {y!r} yet")
    rows = rows.dropna(subset=[c for c in (x, line) if c is not None])
    if rows.empty:
        given = f"{x!r} and {line!r}" if line else repr(x)
        raise CliError(f"no measured entity with a value for {y!r} has one for {given}")
    groups = rows.groupby(line, sort=True) if line else [("all", rows)]
    series = {}
    for label, group in groups:
        means = group.groupby(x, sort=False)[y].mean()
        means = means.iloc[sorted(range(len(means)), key=lambda i: natural_key(means.index[i]))]
        series[str(label)] = ([*means.index], [float(v) for v in means], len(group))
    return series


def _kept_apart(texts: pd.Series, numbers: pd.Series) -> bool:
    """Whether reading `texts` as `numbers` keeps distinct values distinct (`1.1` and `1.10`,
    `7` and `007` are other entities, not one point averaging them)."""
    present = texts.notna()
    return texts[present].map(repr).nunique() == numbers[present].nunique()


def _category_key(value: object) -> tuple[object, str]:
    """The x axis's order of values that are not all numbers: `natural_key`, then the text."""
    return (natural_key(value), str(value))


def _drawing(
    series: dict[str, tuple[list[float], list[float], int]], x: str, y: str, line: str | None
) -> Callable[[Axes], None]:
    values = [v for xs, _, _ in series.values() for v in xs]
    numeric = all(isinstance(v, Real) and not isinstance(v, bool) for v in values)
    categories = sorted(set(values), key=_category_key) if not numeric else []
    position = {category: k for k, category in enumerate(categories)}

    def draw(axes: Axes) -> None:
        for label, (xs, ys, count) in series.items():
            name = f"{line}={label}" if line else label
            at = xs if numeric else [position[v] for v in xs]  # one order for every line
            axes.plot(at, ys, "o-", label=f"{name} ({count})")
        if not numeric:
            axes.set_xticks(range(len(categories)), labels=[str(c) for c in categories])
        elif values and min(values) > 0 and max(values) / min(values) >= LOG_SPAN:
            axes.set_xscale("log", base=2)
        axes.set_xlabel(x)
        axes.set_ylabel(y)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best")

    return draw
