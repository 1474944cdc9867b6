"""The Optuna operators: `optuna_tpe`, `optuna_gp`, `optuna_cmaes` and `optuna_nsga2`.

Each proposes the next points to measure with `Measure`, at most `free_slots` at a time, so
`batch_size` is the number of trials in flight. Objectives are the operation's `objectives`
(one or two) or its `objective`. The operation ends when the space has no free point
left (`space_exhausted`), when `number_entities` points were requested
(`requested_entities_measured`), or by a stopping rule.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import ClassVar

from optuna.distributions import FloatDistribution, IntDistribution

from discospace.core import DiscospaceError, Entity
from discospace.core.operation_rules import objectives_problem
from discospace.events import OperationParameters
from discospace.explorer.domain.operator import (
    Finish,
    Measure,
    OperationView,
    Proposal,
    Wait,
    give_up_when_failing,
)
from discospace.explorer.domain.spaces import KnownSpace
from discospace.explorer.operators.optuna_search.candidates import Pool, pool_of
from discospace.explorer.operators.optuna_search.history import History, Source, history_of
from discospace.explorer.operators.optuna_search.options import SearchOptions, parse_options
from discospace.explorer.operators.optuna_search.samplers import (
    SamplerKind,
    missing_packages,
)
from discospace.explorer.operators.optuna_search.space import SearchSpace
from discospace.explorer.operators.optuna_search.study import Search, suggest
from discospace.explorer.operators.optuna_search.transfer import Transfer, transfer_of

TRANSFERS: tuple[SamplerKind, ...] = ("tpe", "gp")
GP_MAX_CHOICES = 2**24
"""Values of one stepped property above which `optuna_gp` is refused: Optuna's GPSampler builds
an array of every value of a stepped distribution at each ask (2^40 values: 8 TiB, a bare
MemoryError)."""
"""Samplers whose start-up other spaces' results choose (`transfer.py`)."""
_POOLS = 16
"""Pools (listed points of a space) kept between decisions, most recently used first."""


class OptunaOperator:
    """Model-based search with one of Optuna's samplers, as a pure decide function."""

    name: ClassVar[str]
    kind: ClassVar[SamplerKind]

    def __init__(self) -> None:
        self._pools: OrderedDict[tuple[str, str, int], Pool] = OrderedDict()

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        options = parse_options(parameters.options, self.name)
        if isinstance(options, str):
            return options
        missing = missing_packages(self.kind)
        if missing:
            return (
                f"{self.name} needs the packages {', '.join(missing)}, which are not installed: "
                "install the explorer with its 'gp' extra"
            )
        return _objectives_problem(self, parameters) or self._space_problem(
            parameters, options, space
        )

    def _space_problem(
        self, parameters: OperationParameters, options: SearchOptions, space: KnownSpace
    ) -> str | None:
        try:
            search = SearchSpace.of(space.entity_space, numeric_only=self.kind == "cmaes")
            _listed(search, options)
        except DiscospaceError as error:
            return f"{self.name} cannot search space '{space.space_id}': {error}"
        if self.kind == "gp":
            wide = _widest_stepped(search)
            if wide is not None and wide[1] > GP_MAX_CHOICES:
                return (
                    f"{self.name} lists every value of a stepped property to choose among them, "
                    f"and property '{wide[0]}' has {wide[1]:,} (over {GP_MAX_CHOICES:,}): use "
                    "optuna_tpe, or a coarser interval"
                )
        unbounded = math.isinf(space.size) and options.candidates is None
        if unbounded and parameters.number_entities == "all" and not _has_budget(parameters):
            return (
                f"space '{space.space_id}' has continuous properties: give {self.name} a budget "
                "(number_entities, or a stopping rule such as max_measurements)"
            )
        return None

    def propose(self, view: OperationView) -> Proposal:
        give_up_when_failing(view)
        search = self._search(view)
        history = history_of(view, search.sources, search.options.warm_start)
        wanted = view.parameters.number_entities
        if wanted != "all" and len(history.requested) >= wanted:
            return Finish("requested_entities_measured", f"{wanted} points were requested")
        if search.pool.free_count(history.taken) <= 0:
            return Finish("space_exhausted", _exhausted(search, history))
        if view.free_slots == 0:
            return Wait()
        count = (
            view.free_slots
            if wanted == "all"
            else min(view.free_slots, wanted - len(history.requested))
        )
        points = suggest(search, history, count, view.parameters.batch_size)
        if not points:
            return Finish("operator_finished", f"{self.name} found no free point to suggest")
        return Measure(tuple(point.as_dict() for point in points))

    def _search(self, view: OperationView) -> Search:
        options = parse_options(view.parameters.options, self.name)
        assert isinstance(options, SearchOptions), "checked when the operation started"
        space = SearchSpace.of(view.space.entity_space, numeric_only=self.kind == "cmaes")
        seed = view.parameters.seed or 0
        sources = tuple(_sources(view.parameters, view.space))
        pool = self._pool(view.space.space_id, space, options, seed)
        transfer = _transfer(view, options, sources, self.kind)
        return Search(self.kind, options, space, sources, pool, seed, transfer)

    def _pool(self, space_id: str, space: SearchSpace, options: SearchOptions, seed: int) -> Pool:
        key = (space_id, repr(options.candidates), seed)
        pool = self._pools.pop(key, None) or pool_of(space, seed, _listed(space, options))
        self._pools[key] = pool
        while len(self._pools) > _POOLS:
            self._pools.popitem(last=False)
        return pool


def _listed(search: SearchSpace, options: SearchOptions) -> list[Entity] | None:
    """The `candidates` option as entities of the space (in their order, without repeats)."""
    if options.candidates is None:
        return None
    points: dict[str, Entity] = {}
    for point in options.candidates:
        entity = search.entity_space.normalise(point)
        points.setdefault(entity.id, entity)
    return list(points.values())


def _transfer(
    view: OperationView, options: SearchOptions, sources: tuple[Source, ...], kind: SamplerKind
) -> Transfer | None:
    """Other spaces' results as a transfer, for one objective searched by TPE or GP."""
    if not options.transfer or len(sources) != 1 or kind not in TRANSFERS:
        return None
    return transfer_of(view.store_elsewhere, sources[0], view.space.entity_space, view.space.needs)


def _sources(parameters: OperationParameters, space: KnownSpace) -> list[Source]:
    sources = [Source.of(o, space) for o in parameters.objectives_to_optimise()]
    return [s for s in sources if s is not None]


def _objectives_problem(operator: OptunaOperator, parameters: OperationParameters) -> str | None:
    """How many objectives this operator is given, if it cannot take them (core's rule, which
    the CLI applies too); whether the space measures each is checked for every operator at
    start (`domain/starting.py`)."""
    count = len(parameters.objectives_to_optimise())
    return objectives_problem(
        operator.name,
        count,
        parameters.options,
        parameters.objective,
        parameters.objectives or (),
    )


def _has_budget(parameters: OperationParameters) -> bool:
    rules = parameters.stopping
    budgets = (
        rules.max_measurements,
        rules.max_duration,
        rules.max_measurement_time,
        rules.max_training,
    )
    return any(budget is not None for budget in budgets)


def _exhausted(search: Search, history: History) -> str:
    known = len(history.taken)
    return f"every one of the {search.pool.size()} points is measured or requested ({known} known)"


class OptunaTpe(OptunaOperator):
    """Tree-structured Parzen estimator (Optuna's `TPESampler`)."""

    name = "optuna_tpe"
    kind = "tpe"


class OptunaGp(OptunaOperator):
    """Gaussian-process Bayesian optimisation (Optuna's `GPSampler`; needs torch and scipy)."""

    name = "optuna_gp"
    kind = "gp"


class OptunaCmaEs(OptunaOperator):
    """CMA-ES (Optuna's `CmaEsSampler`): numeric spaces, one objective."""

    name = "optuna_cmaes"
    kind = "cmaes"


class OptunaNsga2(OptunaOperator):
    """NSGA-II (Optuna's `NSGAIISampler`), for two objectives (one works too)."""

    name = "optuna_nsga2"
    kind = "nsga2"


def optuna_operators() -> list[OptunaOperator]:
    """One of each Optuna operator, to register with the explorer."""
    return [OptunaTpe(), OptunaGp(), OptunaCmaEs(), OptunaNsga2()]


def _widest_stepped(search: SearchSpace) -> tuple[str, int] | None:
    """The stepped property (an int, or a float with a step) with the most values, and how
    many; None when there is none."""
    counts = []
    for dimension in search.dimensions:
        distribution = dimension.distribution
        step = getattr(distribution, "step", None)
        if isinstance(distribution, IntDistribution | FloatDistribution) and step:
            values = round((distribution.high - distribution.low) / step) + 1
            counts.append((dimension.name, values))
    return max(counts, key=lambda item: item[1], default=None)
