"""`discospace operation plot`: best so far against measurements, or a Pareto front."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from matplotlib import pyplot
from typer.testing import CliRunner

import discospace.client
from discospace.cli.errors import CliError
from discospace.cli.main import app
from discospace.cli.plot import (
    _best_so_far_drawing,
    _pareto_drawing,
    _recurrence_cost_drawing,
    best_so_far,
    front_of,
    plot_operation,
    sources_of,
)
from discospace.client import OperationProgress, OperatorChoice, SpaceDetail
from discospace.core import Objective, ObjectiveSource, objective_source, pareto_front, result_value

MAX_TPS = {"property": "tps", "direction": "max"}
MIN_JOULES = {"property": "joules", "direction": "min"}


TPS, JOULES = Objective(**MAX_TPS), Objective(**MIN_JOULES)
BENCH_TPS, BENCH_JOULES = ObjectiveSource("bench", "tps"), ObjectiveSource("bench", "joules")
OBSERVED = {"tps": "bench.tps", "joules": "bench.joules"}
"""The space's observed properties (view column -> observed property id), as the projector
lists them: `bench` measures both targets."""


@dataclass(frozen=True)
class Result:
    entity_id: str
    experiment_id: str
    is_valid: bool
    values: dict[str, Any] = field(default_factory=dict)
    reused: bool = False


RESULTS = [
    Result("e1", "bench", True, {"tps": 3.0, "joules": 30.0}),
    Result("e2", "bench", False),
    Result("e3", "bench", True, {"tps": 2.0, "joules": 10.0}),
    Result("e4", "bench", True, {"tps": 5.0, "joules": 50.0}),
    Result("e5", "bench", True, {"tps": 4.0, "joules": 60.0}),
]


class Projector:
    """A stand-in for `discospace.client.Client` with an operation, its space and results."""

    def __init__(self, parameters: dict[str, Any], results: list[Result]) -> None:
        self.progress = OperationProgress(
            operation_id="op-1",
            space_id="space-1",
            operator="optuna_tpe",
            status="completed",
            parameters=parameters,
        )
        self.results = results

    def operation(self, operation_id: str) -> OperationProgress:
        return self.progress

    def space(self, space_id: str) -> SpaceDetail:
        return SpaceDetail(space_id=space_id, status="registered", observed_properties=OBSERVED)

    def operation_results(self, operation_id: str) -> list[Result]:
        return self.results


def test_the_best_so_far_keeps_the_best_value_seen_and_skips_invalid_results():
    values = [3.0, None, 2.0, 5.0, 4.0]

    assert best_so_far(values, TPS) == [3.0, 3.0, 3.0, 5.0, 5.0]
    assert best_so_far([None, 2.0, 1.0], Objective(property="tps", direction="min")) == [
        None,
        2.0,
        1.0,
    ]


def test_the_pareto_front_holds_the_points_no_other_point_beats_on_both_objectives():
    points = [(3.0, 30.0), (2.0, 10.0), (5.0, 50.0), (4.0, 60.0)]

    front = pareto_front(points, (TPS, JOULES))

    assert front == [1, 0, 2]


def test_an_observed_property_id_names_the_experiments_target():
    source = objective_source("bench.tps", None)

    assert source is not None
    assert result_value(RESULTS[0], source) == 3.0
    assert result_value(Result("e9", "energy", True, {"tps": 1.0}), source) is None


def test_one_objective_is_drawn_as_every_result_and_the_best_so_far():
    figure, axes = pyplot.subplots()
    _best_so_far_drawing(RESULTS, TPS, BENCH_TPS)(axes)

    [line] = axes.get_lines()
    assert list(line.get_ydata()) == [3.0, 3.0, 3.0, 5.0, 5.0]
    assert [len(c.get_offsets()) for c in axes.collections] == [4, 1]
    pyplot.close(figure)


def test_the_best_so_far_plot_starts_at_measurement_1_with_leading_invalid_results_shown():
    results = [Result("e1", "bench", False), Result("e2", "bench", False), *RESULTS[:1]]
    figure, axes = pyplot.subplots()
    _best_so_far_drawing(results, TPS, BENCH_TPS)(axes)
    figure.canvas.draw()

    left, right = axes.get_xlim()
    invalid = next(c for c in axes.collections if c.get_label() == "invalid")
    assert left < 1
    assert right > 3
    assert [x for x, _ in invalid.get_offsets()] == [1, 2]
    pyplot.close(figure)


def test_two_objectives_are_drawn_as_the_results_and_their_pareto_front():
    figure, axes = pyplot.subplots()
    front = front_of(RESULTS, (TPS, JOULES), (BENCH_TPS, BENCH_JOULES))
    _pareto_drawing(front, TPS, JOULES)(axes)

    [front] = axes.get_lines()
    assert list(front.get_xdata()) == [2.0, 3.0, 5.0]
    assert len(axes.collections[0].get_offsets()) == 4
    pyplot.close(figure)


def test_the_pareto_legend_counts_what_was_not_shown_as_the_operation_counts_it():
    """The operation counts invalid results among those measured; a reused invalid result and
    a valid one without a number are not shown either, and are said apart."""
    results = [
        *RESULTS,
        Result("e6", "bench", False),
        Result("e7", "bench", False, reused=True),
        Result("e8", "bench", True, {"tps": "n/a", "joules": 1.0}),
    ]
    figure, axes = pyplot.subplots()
    _pareto_drawing(front_of(results, (TPS, JOULES), (BENCH_TPS, BENCH_JOULES)), TPS, JOULES)(axes)

    assert axes.collections[0].get_label() == (
        "results (2 invalid, 1 reused invalid, 1 without a value: not shown)"
    )
    pyplot.close(figure)


def test_a_plot_is_written_as_a_png_file(tmp_path: Path):
    written = plot_operation(Projector({"objective": MAX_TPS}, RESULTS), "op-1", tmp_path / "a.png")

    assert written.read_bytes().startswith(b"\x89PNG")


def test_two_objectives_from_the_options_are_plotted_as_a_pareto_front(tmp_path: Path):
    parameters = {"options": {"objectives": [MAX_TPS, MIN_JOULES]}}
    written = plot_operation(Projector(parameters, RESULTS), "op-1", tmp_path / "p.svg")

    assert b"<svg" in written.read_bytes()


@pytest.mark.parametrize(
    ("parameters", "results", "name", "sentence"),
    [
        ({}, RESULTS, "a.png", "operation op-1 has no objective to plot"),
        ({"objective": MAX_TPS}, [], "a.png", "operation op-1 has no result to plot yet"),
        ({"objective": MAX_TPS}, RESULTS, "a.txt", "the plot file must end in .png"),
    ],
)
def test_what_cannot_be_plotted_is_said_in_one_sentence(
    tmp_path: Path, parameters: dict[str, Any], results: list[Result], name: str, sentence: str
):
    with pytest.raises(CliError, match=sentence):
        plot_operation(Projector(parameters, results), "op-1", tmp_path / name)


def test_a_plot_under_a_file_names_the_file_in_the_way(tmp_path: Path):
    (tmp_path / "notes").write_text("a file, not a folder")
    output = tmp_path / "notes" / "plots" / "a.png"

    with pytest.raises(CliError) as refused:
        plot_operation(Projector({"objective": MAX_TPS}, RESULTS), "op-1", output)

    assert str(refused.value) == (
        f"cannot write the plot to {output}: {tmp_path / 'notes'} is a file, not a folder"
    )


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy, on the way
def test_values_no_axis_can_span_are_said_in_one_sentence(tmp_path: Path):
    """1.7e308 beside -1.7e308 (a store import takes both): matplotlib's ticker raised
    ValueError, a traceback of 89 lines and exit 1."""
    huge = [
        Result("e1", "bench", True, {"tps": 1.7e308, "joules": 1.0}),
        Result("e2", "bench", True, {"tps": -1.7e308, "joules": 2.0}),
    ]
    output = tmp_path / "a.png"

    with pytest.raises(CliError) as refused:
        plot_operation(Projector({"objective": MAX_TPS}, huge), "op-1", output)

    assert str(refused.value).startswith(
        f"cannot draw the plot for {output}: matplotlib refused it ("
    )


def test_the_command_prints_the_file_it_wrote(monkeypatch, tmp_path: Path):
    progress = {
        "operation_id": "op-1",
        "space_id": "space-1",
        "status": "completed",
        "parameters": {"objective": MAX_TPS},
    }
    space = {"space_id": "space-1", "status": "registered", "observed_properties": OBSERVED}
    results = [
        {
            "occurred_at": datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
            "entity_id": "e1",
            "experiment_id": "bench",
            "reused": False,
            "is_valid": True,
            "values": {"tps": 2.0},
        }
    ]

    def projector(request: httpx.Request) -> httpx.Response:
        bodies = {"/operation": progress, "/space": space}
        body = bodies.get(request.url.path, results)
        return httpx.Response(200, content=json.dumps(body).encode())

    real = discospace.client.Client

    class Scripted(real):  # type: ignore[misc,valid-type]
        def __init__(self, base_url: str | None = None) -> None:
            super().__init__(base_url, transport=httpx.MockTransport(projector))

        def operation_results(self, operation_id: str) -> list[Any]:
            answer = self._get("/operation/results", {"id": operation_id})
            return [
                Result(r["entity_id"], r["experiment_id"], r["is_valid"], r["values"])
                for r in answer.json()
            ]

    monkeypatch.setattr(discospace.client, "Client", Scripted)
    target = tmp_path / "plot.png"

    answer = CliRunner().invoke(app, ["operation", "plot", "op-1", "-o", str(target)])

    assert answer.exit_code == 0, answer.output
    assert answer.output.strip() == str(target)
    assert target.read_bytes().startswith(b"\x89PNG")


def test_a_bare_target_is_read_from_the_first_experiment_the_space_declares():
    observed = ("profile.tps", "bench.tps", "bench.joules")

    assert sources_of([TPS, JOULES], observed, "space-1") == [
        ObjectiveSource("profile", "tps"),
        ObjectiveSource("bench", "joules"),
    ]


def test_a_bare_target_cannot_be_placed_in_a_space_the_projector_does_not_know(tmp_path: Path):
    projector = Projector({"objective": MAX_TPS}, RESULTS)
    projector.progress = projector.progress.model_copy(update={"space_id": None})

    with pytest.raises(CliError, match="space None is not known to the projector"):
        plot_operation(projector, "op-1", tmp_path / "a.png")


ZEUS_CHOICE = OperatorChoice(
    values={"batch_size": 128, "power_limit": 175},
    expected_cost=40000.0,
    cost_so_far=123456.0,
    recurrence_costs=(50000.0, 41000.0, 32456.0),
    recurrence_phases=("pruning", "pruning", "bandit"),
)


def test_zeus_bsos_cost_per_recurrence_is_drawn_with_its_phases_and_expected_cost():
    figure, axes = pyplot.subplots()
    _recurrence_cost_drawing(ZEUS_CHOICE)(axes)

    phases = {p.get_label(): p.get_x() for p in axes.patches if not p.get_label().startswith("_")}
    [expected] = [line for line in axes.get_lines() if line.get_label().startswith("expected")]
    points = [tuple(xy) for c in axes.collections for xy in c.get_offsets()]
    assert phases == {"pruning (2)": 0.5, "bandit (1)": 2.5}
    assert sorted(points) == [(1, 50000.0), (2, 41000.0), (3, 32456.0)]
    assert list(expected.get_ydata()) == [40000.0, 40000.0]
    assert expected.get_label() == "expected cost of batch_size=128, power_limit=175"
    assert axes.get_xlim() == (0.5, 3.5)
    pyplot.close(figure)


def test_a_choice_with_fewer_phases_than_costs_is_one_sentence() -> None:
    """A bare ValueError from zip (the client reads answers tolerantly)."""
    odd = ZEUS_CHOICE.model_copy(update={"recurrence_phases": ("pruning",)})
    with pytest.raises(CliError, match="has 3 recurrence costs but 1 phases: it cannot be drawn"):
        _recurrence_cost_drawing(odd)


def test_a_completed_zeus_bso_operation_is_plotted_without_an_objective(tmp_path: Path):
    projector = Projector({"options": {"default_batch_size": 128}}, [])
    projector.progress = projector.progress.model_copy(
        update={"operator": "zeus_bso", "choice": ZEUS_CHOICE}
    )

    written = plot_operation(projector, "op-1", tmp_path / "zeus.png")

    assert written.read_bytes().startswith(b"\x89PNG")


def test_a_running_zeus_bso_operation_says_when_its_choice_can_be_plotted(tmp_path: Path):
    projector = Projector({"options": {"default_batch_size": 128}}, [])
    projector.progress = projector.progress.model_copy(
        update={"operator": "zeus_bso", "status": "running"}
    )

    with pytest.raises(CliError, match="reports what it chose when it completes"):
        plot_operation(projector, "op-1", tmp_path / "zeus.png")


class DependentProjector(Projector):
    """Its space measures `bench` and `energy`, which reads `bench.tps`."""

    def space(self, space_id: str) -> SpaceDetail:
        from discospace.core import ExperimentSpec
        from discospace.core.spec import ExperimentRef, PropertySpec, SpaceSpec

        experiments = [
            ExperimentSpec(
                actuator="a", experiment="bench", target_properties=("tps",),
                required_properties=("batch_size",),
            ),
            ExperimentSpec(
                actuator="a", experiment="energy", target_properties=("joules",),
                required_properties=("batch_size", "bench.tps"),
            ),
        ]  # fmt: skip
        spec = SpaceSpec(
            sample_store="s",
            entity_space=(PropertySpec(name="batch_size", values=(1, 2, 4)),),
            measurement_space=tuple(
                ExperimentRef(actuator="a", experiment=e.experiment) for e in experiments
            ),
        )
        observed = {"tps": "bench.tps", "joules": "energy.joules"}
        return SpaceDetail(
            space_id=space_id,
            status="registered",
            spec=spec,
            experiments=experiments,
            observed_properties=observed,
        )


OUT_OF_MEMORY = [
    Result("e1", "bench", True, {"tps": 3.0}),
    Result("e1", "energy", True, {"joules": 30.0}),
    Result("e2", "bench", False),
    Result("e3", "bench", False),
    Result("e3", "bench", False),  # a second result of the pair: one configuration, drawn once
    Result("e1", "energy", True, {"joules": 5.0}),  # so is e1, its first result counts
    Result("e1", "bench", False),
]


def test_an_objective_whose_dependent_experiment_never_ran_plots_those_entities_as_invalid(
    tmp_path: Path, monkeypatch
):
    """`energy` never runs where `bench` ran out of memory: those entities were left out of
    the plot (one whose every `bench` ran out of memory had "no result to plot yet")."""
    from discospace.cli import plot

    drawn: list[Any] = []
    real = plot._best_so_far_drawing
    monkeypatch.setattr(
        plot,
        "_best_so_far_drawing",
        lambda results, *rest: drawn.append(results) or real(results, *rest),
    )

    plot_operation(
        DependentProjector({"objective": MIN_JOULES}, OUT_OF_MEMORY), "op-1", tmp_path / "a.png"
    )
    plot_operation(
        DependentProjector({"objective": MIN_JOULES}, OUT_OF_MEMORY[2:5]),
        "op-1",
        tmp_path / "b.png",
    )

    assert [[(r.entity_id, r.experiment_id) for r in results] for results in drawn] == [
        [("e1", "energy"), ("e2", "bench"), ("e3", "bench")],
        [("e2", "bench"), ("e3", "bench")],
    ]


def test_a_front_counts_entities_whose_dependent_objective_never_ran_as_invalid():
    space = DependentProjector({}, []).space("space-1")
    from discospace.cli.plot import _needs

    front = front_of(
        OUT_OF_MEMORY,
        [TPS, JOULES],
        [BENCH_TPS, ObjectiveSource("energy", "joules")],
        _needs(space),
    )

    assert [p.entity_id for p in front.points] == ["e1"]
    assert front.not_shown.text() == "2 invalid"
