"""Every operator the explorer runs, by name: a new operator is added to `known_operators`."""

from __future__ import annotations

from discospace.explorer.domain.operator import OperatorRegistry
from discospace.explorer.operators.optuna_search import optuna_operators
from discospace.explorer.operators.random_walk import RandomWalk
from discospace.explorer.operators.zeus.operator import ZeusBso


def known_operators() -> OperatorRegistry:
    """Every operator the explorer runs, by name; a new operator is added here."""
    return OperatorRegistry([RandomWalk(), ZeusBso(), *optuna_operators()])
