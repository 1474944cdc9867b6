"""``discospace operation plot OP_ID -o FILE.png``: an operation's results as a picture.

One objective: every result of the objective's experiment in the order it arrived (valid values
as dots, invalid ones as crosses along the bottom) and the best so far as a step line. Two
objectives (`objectives`): a point per entity with a valid value for both, and the Pareto front
drawn through the non-dominated ones. An operator that reported what it chose (`zeus_bso`,
which has no objective): the cost of each recurrence, the phases it went through (pruning,
bandit) shaded, and the expected cost of its choice. A pipeline with trials: each ended trial's
objective value against its number (failed trials as crosses), the best so far, and the best
trial with its recipe.

Which experiment's results hold an objective, a result's value, which is better and the front
are the rules of `discospace.core.results`, the ones the explorer and the projector follow; the
space's experiments, in their declared order, come from the projector with the results
(`discospace.client`). matplotlib draws with the Agg backend (no display needed), imported only
by this command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

from discospace.cli.errors import CliError, nearest_existing
from discospace.core import (
    DiscospaceError,
    ExperimentCatalog,
    MeasurementSpace,
    Objective,
    ObjectivePoint,
    ObjectiveSource,
    objective_needs,
    objective_points,
    objective_source,
    pareto_front,
    result_value,
    results,
)
from discospace.core.loading import describe_validation_error
from discospace.events import OperationParameters

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from discospace.client import Client, OperationProgress, OperatorChoice, SpaceDetail

FORMATS = (".png", ".svg", ".pdf")


class Result(results.Result, Protocol):
    """One result of an operation, as the projector lists them (in arrival order): a result as
    core's rules read it, and whether the store answered it."""

    @property
    def reused(self) -> bool: ...


def objectives_of(progress: OperationProgress) -> list[Objective]:
    """The operation's objectives: `objectives` when given, else `objective`."""
    try:
        parameters = OperationParameters.model_validate(progress.parameters)
    except ValidationError as error:
        raise CliError(
            f"the parameters of operation {progress.operation_id} cannot be read: "
            f"{describe_validation_error(error)}"
        ) from None
    objectives = parameters.objectives_to_optimise()
    if not objectives:
        raise CliError(
            f"operation {progress.operation_id} has no objective to plot, nor a choice (an "
            "operator such as zeus_bso reports what it chose when it completes)"
        )
    return objectives


def sources_of(
    objectives: Sequence[Objective], observed_ids: Sequence[str] | None, space_id: str | None
) -> list[ObjectiveSource]:
    """Where each objective's values come from in the space (its observed property ids in
    declared order; None when the projector does not know the space)."""
    sources = []
    for objective in objectives:
        source = objective_source(objective.property, observed_ids)
        if source is None and observed_ids is None:
            raise CliError(
                f"space {space_id} is not known to the projector, so the experiment that "
                f"measures '{objective.property}' cannot be told"
            )
        if source is None:
            raise CliError(f"no experiment of space {space_id} measures '{objective.property}'")
        sources.append(source)
    return sources


def best_so_far(values: Sequence[float | None], objective: Objective) -> list[float | None]:
    """The best value after each result (None until a first valid one)."""
    best: float | None = None
    curve = []
    for value in values:
        if value is not None and objective.improves(value, best):
            best = value
        curve.append(best)
    return curve


@dataclass(frozen=True)
class NotShown:
    """Entities with a result for every objective but no valid value for some, by why: an
    invalid result measured (what the operation's `invalid` count counts), an invalid result
    reused from the sample store (counted among `reused`), or valid results without a number."""

    invalid: int = 0
    reused_invalid: int = 0
    without_value: int = 0

    @classmethod
    def of(cls, points: Sequence[ObjectivePoint[Result]]) -> NotShown:
        invalid = [next((r for r in p.results if not r.is_valid), None) for p in points]
        return cls(
            invalid=sum(r is not None and not r.reused for r in invalid),
            reused_invalid=sum(r is not None and r.reused for r in invalid),
            without_value=invalid.count(None),
        )

    @property
    def total(self) -> int:
        return self.invalid + self.reused_invalid + self.without_value

    def text(self) -> str:
        """``2 invalid, 1 reused invalid, 1 without a value`` (the parts that are not 0)."""
        parts = (
            (self.invalid, "invalid"),
            (self.reused_invalid, "reused invalid"),
            (self.without_value, "without a value"),
        )
        return ", ".join(f"{count} {what}" for count, what in parts if count) or "0 invalid"


@dataclass(frozen=True)
class Front:
    """The points of two objectives, and which of them are on the Pareto front."""

    points: list[ObjectivePoint[Result]]
    """Entities with a valid value for every objective, in the order they completed."""
    front: list[int]
    """Indices into `points` of the non-dominated ones, along the first objective."""
    not_shown: NotShown
    """Entities with a result for every objective but no valid value for some."""

    @property
    def infeasible(self) -> int:
        return self.not_shown.total

    def values(self, index: int) -> tuple[float, ...]:
        values = self.points[index].values
        assert values is not None
        return values


def front_of(
    results: Sequence[Result],
    objectives: Sequence[Objective],
    sources: Sequence[ObjectiveSource],
    needs: Mapping[str, Sequence[ObjectiveSource]] | None = None,
) -> Front:
    """The Pareto front of the results for these objectives (read at `sources`; `needs`: what
    the space's dependent experiments read, see `objective_points`)."""
    points = objective_points(results, sources, needs)
    feasible = [point for point in points if point.values is not None]
    front = pareto_front([point.values for point in feasible if point.values], objectives)
    return Front(feasible, front, NotShown.of([p for p in points if p.values is None]))


def plot_operation(client: Client, operation_id: str, output: Path) -> Path:
    """Draw operation `operation_id` into `output` (.png, .svg or .pdf); the path written."""
    if output.suffix.lower() not in FORMATS:
        raise CliError(f"the plot file must end in {', '.join(FORMATS)}, not '{output.name}'")
    progress = client.operation(operation_id)
    title = f"{operation_id} ({progress.operator or 'operator'}, {progress.status})"
    if progress.is_pipeline:
        return save_figure(_trials_drawing(progress), title, output)
    if progress.choice is not None and progress.choice.recurrence_costs:
        return save_figure(_recurrence_cost_drawing(progress.choice), title, output)
    objectives = objectives_of(progress)
    space = _space(client, progress.space_id)
    observed = None if space is None else tuple(space.observed_properties.values())
    sources = sources_of(objectives, observed, progress.space_id)
    needs = _needs(space)
    results = _results(client, operation_id)
    draw: Callable[[Axes], None]
    if len(objectives) == 1:
        measured = _read_for(results, sources[0], needs)
        _some(measured, operation_id)
        draw = _best_so_far_drawing(measured, objectives[0], sources[0])
    else:
        front = front_of(results, objectives, sources, needs)
        _some(front.points, operation_id, front.infeasible)
        draw = _pareto_drawing(front, objectives[0], objectives[1])
    return save_figure(draw, title, output)


def _some(results: Sequence[object], operation_id: str, others: int = 0) -> None:
    if not results and not others:
        raise CliError(f"operation {operation_id} has no result to plot yet")


def _space(client: Client, space_id: str | None) -> SpaceDetail | None:
    """The operation's space as the projector describes it; None when it is unknown."""
    from discospace.client import NotKnownError

    if space_id is None:
        return None
    try:
        return client.space(space_id)
    except NotKnownError:
        return None


def _needs(space: SpaceDetail | None) -> dict[str, tuple[ObjectiveSource, ...]]:
    """What the space's dependent experiments read; {} when it cannot be told."""
    if space is None or space.spec is None:
        return {}
    try:
        measurement = MeasurementSpace.from_refs(
            space.spec.measurement_space, ExperimentCatalog(space.experiments)
        )
    except DiscospaceError:
        return {}
    return objective_needs(measurement.experiments)


def _read_for(
    results: Sequence[Result],
    source: ObjectiveSource,
    needs: Mapping[str, Sequence[ObjectiveSource]],
) -> list[Result]:
    """One result per entity, as the explorer reads them (`objective_points`): the first of
    the objective's experiment, or the one that kept it from running (an experiment it reads
    from gave no valid result), drawn as invalid where it was left out (an operation whose
    every `bench` ran out of memory had "no result to plot")."""
    return [point.results[0] for point in objective_points(results, [source], needs)]


def _results(client: Client, operation_id: str) -> list[Result]:
    """The operation's results in arrival order, from the projector's `/operation/results`."""
    return list(client.operation_results(operation_id))


def _best_so_far_drawing(
    results: Sequence[Result], objective: Objective, source: ObjectiveSource
) -> Callable[[Axes], None]:
    values = [result_value(r, source) for r in results]
    curve = best_so_far(values, objective)

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
        measurements_axis(axes, len(values))
        axes.set_ylabel(f"{objective.property} ({objective.direction})")
        axes.legend(loc="best")

    return draw


def measurements_axis(axes: Axes, count: int, label: str = "measurements") -> None:
    """An x axis of whole numbers from 1 to `count`, whatever is drawn on it: marks placed
    along the bottom (invalid results) do not count in matplotlib's autoscaling, so leading
    invalid results would otherwise fall off the left edge."""
    from matplotlib.ticker import MaxNLocator

    axes.set_xlim(0.5, count + 0.5)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel(label)


def _pareto_drawing(front: Front, first: Objective, second: Objective) -> Callable[[Axes], None]:
    points = [front.values(i) for i in range(len(front.points))]

    def draw(axes: Axes) -> None:
        axes.scatter(
            [p[0] for p in points],
            [p[1] for p in points],
            s=14,
            c="0.6",
            label=f"results ({front.not_shown.text()}: not shown)",
        )
        axes.plot(
            [points[i][0] for i in front.front],
            [points[i][1] for i in front.front],
            "o-",
            c="tab:blue",
            label="Pareto front",
        )
        axes.set_xlabel(f"{first.property} ({first.direction})")
        axes.set_ylabel(f"{second.property} ({second.direction})")
        axes.legend(loc="best")

    return draw


def _trials_drawing(progress: OperationProgress) -> Callable[[Axes], None]:
    """A pipeline's trials: each ended trial's objective value against its number (failed
    ones as crosses along the bottom), the best so far, and the best trial's recipe."""
    from discospace.client.pipelines import best_trial, pipeline_objective, trial_points

    every = trial_points(progress)
    trials = [t for t in every if t.status not in ("pending", "running")]
    objective = pipeline_objective(progress)
    if not trials or objective is None:
        if not every:
            some = "it has no trials"
        elif objective is None:
            some = "its trials name no objective it can read"
        else:
            some = "no trial has ended yet"
        raise CliError(
            f"pipeline {progress.operation_id} has nothing to plot: {some} (plot a job's child "
            "operation instead: discospace operation plot <child operation id>)"
        )
    curve = best_so_far([t.objective for t in trials], objective)
    best = best_trial(trials, objective)

    def draw(axes: Axes) -> None:
        from matplotlib.ticker import MaxNLocator

        valid = [t for t in trials if t.objective is not None]
        failed = [t.trial for t in trials if t.objective is None]
        axes.scatter([t.trial for t in valid], [t.objective for t in valid], c="0.5", label="trial")
        if failed:
            axes.scatter(
                failed,
                [0.0] * len(failed),
                marker="x",
                c="tab:red",
                transform=axes.get_xaxis_transform(),
                label="failed",
            )
        numbers = [t.trial for t in trials]
        steps = [math.nan if c is None else c for c in curve]
        axes.step(numbers, steps, where="post", c="tab:blue", label="best so far")
        if best is not None and best.objective is not None:
            recipe = ", ".join(f"{k}={v}" for k, v in best.values.items())
            axes.scatter(
                [best.trial],
                [best.objective],
                s=80,
                facecolors="none",
                edgecolors="tab:green",
                label=f"best: trial {best.trial} ({recipe})",
            )
        axes.set_xlim(min(numbers) - 0.5, max(numbers) + 0.5)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_xlabel("trial")
        axes.set_ylabel(f"{objective.property} ({objective.direction})")
        axes.legend(loc="best")

    return draw


PHASE_COLOURS = ("tab:orange", "tab:blue", "tab:purple", "tab:brown")


def _recurrence_cost_drawing(choice: OperatorChoice) -> Callable[[Axes], None]:
    costs, phases = choice.recurrence_costs, choice.recurrence_phases
    if len(costs) != len(phases):  # the event type refuses it; the client reads tolerantly
        raise CliError(
            f"the projector's choice has {len(costs)} recurrence costs but {len(phases)} "
            "phases: it cannot be drawn (are the client and the projector the same version?)"
        )
    numbers = list(range(1, len(costs) + 1))
    order = list(dict.fromkeys(phases))
    colours = {phase: PHASE_COLOURS[i % len(PHASE_COLOURS)] for i, phase in enumerate(order)}
    chosen = ", ".join(f"{name}={value}" for name, value in choice.values.items())

    def draw(axes: Axes) -> None:
        axes.plot(numbers, costs, c="0.75", lw=0.8, zorder=1)
        for phase in order:
            mine = [n for n, p in zip(numbers, phases, strict=True) if p == phase]
            for index, (first, last) in enumerate(_runs(mine)):
                label = f"{phase} ({len(mine)})" if index == 0 else "_"
                axes.axvspan(first - 0.5, last + 0.5, color=colours[phase], alpha=0.12, label=label)
            axes.scatter(mine, [costs[n - 1] for n in mine], s=14, c=colours[phase], zorder=2)
        if choice.expected_cost is not None:
            axes.axhline(
                choice.expected_cost, ls="--", c="tab:green", label=f"expected cost of {chosen}"
            )
        measurements_axis(axes, len(costs), "recurrence")
        axes.set_ylabel("cost per recurrence")
        axes.legend(loc="best")

    return draw


def _runs(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive stretches of increasing numbers, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


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
        existing = nearest_existing(output.parent)
        why = error.strerror if existing.is_dir() else f"{existing} is a file, not a folder"
        raise CliError(f"cannot write the plot to {output}: {why}") from None
    except (ValueError, OverflowError) as error:  # matplotlib's ticks over values near 1e308
        said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CliError(
            f"cannot draw the plot for {output}: matplotlib refused it ({said}); values near "
            "the largest float (1e308) span more than an axis can, and a '$' in a name is read "
            "as mathematics"
        ) from None
    finally:
        pyplot.close(figure)
    return output
