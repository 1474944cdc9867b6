"""Model-based search with Optuna, as pure decide functions the explorer runs.

`operator.py` holds the operators (`optuna_tpe`, `optuna_gp`, `optuna_cmaes`, `optuna_nsga2`);
`space.py` maps entity spaces to Optuna distributions; `history.py` reads an operation's
history (warm start from the sample store included); `study.py` rebuilds a study from it and
asks; `candidates.py` keeps suggestions to points not measured yet.
"""

from discospace.explorer.operators.optuna_search.operator import (
    OptunaCmaEs,
    OptunaGp,
    OptunaNsga2,
    OptunaOperator,
    OptunaTpe,
    optuna_operators,
)
from discospace.explorer.operators.optuna_search.options import SearchOptions
from discospace.explorer.operators.optuna_search.space import SearchSpace, SearchSpaceError

__all__ = [
    "OptunaCmaEs",
    "OptunaGp",
    "OptunaNsga2",
    "OptunaOperator",
    "OptunaTpe",
    "SearchOptions",
    "SearchSpace",
    "SearchSpaceError",
    "optuna_operators",
]
