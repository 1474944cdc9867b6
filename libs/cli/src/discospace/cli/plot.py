"""``discospace operation plot OP_ID -o FILE.png``: an operation's results as a picture.

One objective: every result in the order it arrived (valid values as dots, invalid ones as
crosses along the bottom) and the best so far as a step line. Two objectives
(`options.objectives`): every valid result, with the Pareto front drawn through the
non-dominated ones. The data come from the projector through `discospace.client`; matplotlib
draws with the Agg backend (no display needed), imported only by this command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from discospace.cli.errors import CliError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from discospace.client import Client, OperationProgress

FORMATS = (".png", ".svg", ".pdf")


class Result(Protocol):
    """One result of an operation, as the projector lists them (in arrival order)."""

    experiment_id: str
    is_valid: bool
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Goal:
    """An objective: a target (or `<experiment id>.<target>`) and a direction."""

    property: str
    direction: str

    def value(self, result: Result) -> float | None:
        """The result's value for this objective; None when it has none (or is invalid)."""
        prefix = result.experiment_id + "."
        key = self.property[len(prefix) :] if self.property.startswith(prefix) else self.property
        raw = result.values.get(key) if result.is_valid else None
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            return None
        return float(raw)

    def concerns(self, result: Result) -> bool:
        """Whether the result is of an experiment that measures this objective."""
        prefix = result.experiment_id + "."
        if "." in self.property:
            return self.property.startswith(prefix)
        return self.property in result.values or not result.is_valid

    def better(self, value: float, than: float) -> bool:
        return value > than if self.direction == "max" else value < than


def goals_of(progress: OperationProgress) -> list[Goal]:
    """The operation's objectives: `options.objectives` when given, else `objective`."""
    parameters = progress.parameters
    listed = (parameters.get("options") or {}).get("objectives") or [parameters.get("objective")]
    goals = [Goal(o["property"], o["direction"]) for o in listed if isinstance(o, dict)]
    if not goals:
        raise CliError(f"operation {progress.operation_id} has no objective to plot")
    return goals


def best_so_far(values: Sequence[float | None], goal: Goal) -> list[float | None]:
    """The best value after each result (None until a first valid one)."""
    best: float | None = None
    curve = []
    for value in values:
        if value is not None and (best is None or goal.better(value, best)):
            best = value
        curve.append(best)
    return curve


def pareto_front(points: Sequence[tuple[float, float]], goals: Sequence[Goal]) -> list[int]:
    """Indices of the non-dominated points, ordered along the first objective."""
    signs = [1.0 if g.direction == "max" else -1.0 for g in goals]
    scored = [(p[0] * signs[0], p[1] * signs[1]) for p in points]

    def dominated(i: int) -> bool:
        a = scored[i]
        return any(b[0] >= a[0] and b[1] >= a[1] and b != a for b in scored)

    front = [i for i in range(len(points)) if not dominated(i)]
    return sorted(front, key=lambda i: points[i][0])


def plot_operation(client: Client, operation_id: str, output: Path) -> Path:
    """Draw operation `operation_id` into `output` (.png, .svg or .pdf); the path written."""
    if output.suffix.lower() not in FORMATS:
        raise CliError(f"the plot file must end in {', '.join(FORMATS)}, not '{output.name}'")
    progress = client.operation(operation_id)
    goals = goals_of(progress)
    results = [r for r in _results(client, operation_id) if goals[0].concerns(r)]
    if not results:
        raise CliError(f"operation {operation_id} has no result to plot yet")
    title = f"{operation_id} ({progress.operator or 'operator'}, {progress.status})"
    draw: Callable[[Axes], None]
    if len(goals) == 1:
        draw = _best_so_far_drawing(results, goals[0])
    else:
        draw = _pareto_drawing(results, goals[0], goals[1])
    return save_figure(draw, title, output)


def _results(client: Client, operation_id: str) -> list[Result]:
    """The operation's results in arrival order, from the projector's `/operation/results`."""
    return list(client.operation_results(operation_id))


def _best_so_far_drawing(results: Sequence[Result], goal: Goal) -> Callable[[Axes], None]:
    values = [goal.value(r) for r in results]
    curve = best_so_far(values, goal)

    def draw(axes: Axes) -> None:
        numbers = range(1, len(values) + 1)
        valid = [(n, v) for n, v in zip(numbers, values, strict=True) if v is not None]
        invalid = [n for n, v in zip(numbers, values, strict=True) if v is None]
        axes.scatter([n for n, _ in valid], [v for _, v in valid], s=14, c="0.6", label="result")
        if invalid:
            axes.scatter(
                invalid,
                [0.0] * len(invalid),
                marker="x",
                c="tab:red",
                transform=axes.get_xaxis_transform(),
                label="invalid",
            )
        axes.step(
            numbers,
            [math.nan if c is None else c for c in curve],
            where="post",
            c="tab:blue",
            label="best so far",
        )
        axes.set_xlabel("measurements")
        axes.set_ylabel(f"{goal.property} ({goal.direction})")
        axes.legend(loc="best")

    return draw


def _pareto_drawing(results: Sequence[Result], first: Goal, second: Goal) -> Callable[[Axes], None]:
    pairs = [(first.value(r), second.value(r)) for r in results]
    points = [(a, b) for a, b in pairs if a is not None and b is not None]
    invalid = len(pairs) - len(points)
    front = pareto_front(points, (first, second))

    def draw(axes: Axes) -> None:
        axes.scatter(
            [p[0] for p in points],
            [p[1] for p in points],
            s=14,
            c="0.6",
            label=f"results ({invalid} invalid not shown)",
        )
        axes.plot(
            [points[i][0] for i in front],
            [points[i][1] for i in front],
            "o-",
            c="tab:blue",
            label="Pareto front",
        )
        axes.set_xlabel(f"{first.property} ({first.direction})")
        axes.set_ylabel(f"{second.property} ({second.direction})")
        axes.legend(loc="best")

    return draw


def save_figure(draw: Callable[[Axes], None], title: str, output: Path) -> Path:
    """Draw on one set of axes with matplotlib's Agg backend and write `output`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    try:
        draw(axes)
        axes.set_title(title)
        figure.tight_layout()
        output.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(output)
    except OSError as error:
        raise CliError(f"cannot write the plot to {output}: {error.strerror}") from None
    finally:
        pyplot.close(figure)
    return output
