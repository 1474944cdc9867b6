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
    Goal,
    _best_so_far_drawing,
    _pareto_drawing,
    best_so_far,
    pareto_front,
    plot_operation,
)
from discospace.client import OperationProgress

MAX_TPS = {"property": "tps", "direction": "max"}
MIN_JOULES = {"property": "joules", "direction": "min"}


@dataclass(frozen=True)
class Result:
    experiment_id: str
    is_valid: bool
    values: dict[str, Any] = field(default_factory=dict)


RESULTS = [
    Result("bench", True, {"tps": 3.0, "joules": 30.0}),
    Result("bench", False),
    Result("bench", True, {"tps": 2.0, "joules": 10.0}),
    Result("bench", True, {"tps": 5.0, "joules": 50.0}),
    Result("bench", True, {"tps": 4.0, "joules": 60.0}),
]


class Projector:
    """A stand-in for `discospace.client.Client` with an operation and its results."""

    def __init__(self, parameters: dict[str, Any], results: list[Result]) -> None:
        self.progress = OperationProgress(
            operation_id="op-1", operator="optuna_tpe", status="completed", parameters=parameters
        )
        self.results = results

    def operation(self, operation_id: str) -> OperationProgress:
        return self.progress

    def operation_results(self, operation_id: str) -> list[Result]:
        return self.results


def test_the_best_so_far_keeps_the_best_value_seen_and_skips_invalid_results():
    values = [3.0, None, 2.0, 5.0, 4.0]

    assert best_so_far(values, Goal("tps", "max")) == [3.0, 3.0, 3.0, 5.0, 5.0]
    assert best_so_far([None, 2.0, 1.0], Goal("tps", "min")) == [None, 2.0, 1.0]


def test_the_pareto_front_holds_the_points_no_other_point_beats_on_both_objectives():
    points = [(3.0, 30.0), (2.0, 10.0), (5.0, 50.0), (4.0, 60.0)]

    front = pareto_front(points, (Goal("tps", "max"), Goal("joules", "min")))

    assert front == [1, 0, 2]


def test_an_observed_property_id_names_the_experiments_target():
    goal = Goal("bench.tps", "max")

    assert goal.value(RESULTS[0]) == 3.0
    assert not goal.concerns(Result("energy", True, {"tps": 1.0}))


def test_one_objective_is_drawn_as_every_result_and_the_best_so_far():
    figure, axes = pyplot.subplots()
    _best_so_far_drawing(RESULTS, Goal("tps", "max"))(axes)

    [line] = axes.get_lines()
    assert list(line.get_ydata()) == [3.0, 3.0, 3.0, 5.0, 5.0]
    assert [len(c.get_offsets()) for c in axes.collections] == [4, 1]
    pyplot.close(figure)


def test_two_objectives_are_drawn_as_the_results_and_their_pareto_front():
    figure, axes = pyplot.subplots()
    _pareto_drawing(RESULTS, Goal("tps", "max"), Goal("joules", "min"))(axes)

    [front] = axes.get_lines()
    assert list(front.get_xdata()) == [2.0, 3.0, 5.0]
    assert len(axes.collections[0].get_offsets()) == 4
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


def test_the_command_prints_the_file_it_wrote(monkeypatch, tmp_path: Path):
    progress = {"operation_id": "op-1", "status": "completed", "parameters": {"objective": MAX_TPS}}
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
        body = progress if request.url.path == "/operation" else results
        return httpx.Response(200, content=json.dumps(body).encode())

    real = discospace.client.Client

    class Scripted(real):  # type: ignore[misc,valid-type]
        def __init__(self, base_url: str | None = None) -> None:
            super().__init__(base_url, transport=httpx.MockTransport(projector))

        def operation_results(self, operation_id: str) -> list[Any]:
            answer = self._get("/operation/results", {"id": operation_id})
            return [Result(r["experiment_id"], r["is_valid"], r["values"]) for r in answer.json()]

    monkeypatch.setattr(discospace.client, "Client", Scripted)
    target = tmp_path / "plot.png"

    answer = CliRunner().invoke(app, ["operation", "plot", "op-1", "-o", str(target)])

    assert answer.exit_code == 0, answer.output
    assert answer.output.strip() == str(target)
    assert target.read_bytes().startswith(b"\x89PNG")
