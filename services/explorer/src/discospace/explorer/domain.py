"""The explorer's pure domain in one place: state, fold, decisions and the operators it runs.

State is a fold of events (`state.py`, `operation.py`); the engine (`decide.py`) turns an
operation's state and the time into decisions; operators (`operators.py`, `random_walk.py`)
are pure decide functions the engine asks what to explore next. Nothing here reads a clock,
draws a random number or touches Kafka: time and seeds come in as arguments.
"""

from __future__ import annotations

from discospace.explorer.decide import Decided, Engine, Timing, decide
from discospace.explorer.operation import (
    Decision,
    MeasurementInput,
    OperationInput,
    OperationState,
    evolve,
)
from discospace.explorer.operators import (
    Draw,
    Finish,
    Measure,
    OperationView,
    Operator,
    OperatorRegistry,
    Proposal,
    Wait,
)
from discospace.explorer.optuna_search import optuna_operators
from discospace.explorer.random_walk import RandomWalk
from discospace.explorer.state import ExplorerState, explore, go_live, tick
from discospace.explorer.zeus.operator import ZeusBso


def known_operators() -> OperatorRegistry:
    """Every operator the explorer runs, by name; a new operator is added here."""
    return OperatorRegistry([RandomWalk(), ZeusBso(), *optuna_operators()])


__all__ = [
    "Decided",
    "Decision",
    "Draw",
    "Engine",
    "ExplorerState",
    "Finish",
    "Measure",
    "MeasurementInput",
    "OperationInput",
    "OperationState",
    "OperationView",
    "Operator",
    "OperatorRegistry",
    "Proposal",
    "RandomWalk",
    "Timing",
    "Wait",
    "decide",
    "evolve",
    "explore",
    "go_live",
    "known_operators",
    "tick",
]
