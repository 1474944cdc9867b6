"""Every operator the explorer runs, by name: a new operator is added to `known_operators`."""

from __future__ import annotations

from discospace.explorer.domain.operator import Operator, OperatorRegistry
from discospace.explorer.operators.optuna_search import optuna_operators
from discospace.explorer.operators.pipeline import Pipeline
from discospace.explorer.operators.points import Points
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.explorer.operators.zeus.operator import ZeusBso


def known_operators() -> OperatorRegistry:
    """Every operator the explorer runs, by name; a new operator is added here. A pipeline's
    operation jobs may run any of them, pipelines included."""
    measuring: list[Operator] = [RandomWalk(), ZeusBso(), *optuna_operators(), Points()]
    names = sorted([operator.name for operator in measuring] + [Pipeline.name])
    return OperatorRegistry([*measuring, Pipeline(operators=names)])
