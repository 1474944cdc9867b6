"""Ask/tell as a pure function: a study rebuilt from the history, asked for the next points.

Nothing persists between decisions: the study is rebuilt from the history every time, and the
sampler is seeded from (operation seed, number of the ask), so the same history gives the same
suggestions in any explorer, also after a restart. Told points are complete trials (`is_valid`
as the constraint `constraints:is_valid`, 1 when violated); points in flight are running
trials, so a sampler with a constant liar does not suggest the same point `batch_size` times.

An infeasible trial still needs objective values for Optuna to store it; TPE and NSGA-II never
read them (infeasible trials are ranked by their violation), GP fits its objective model on
every complete trial, so the values given are the median of the feasible ones: neutral, not a
fake optimum or penalty. CMA-ES has no constraints: infeasible points are failed trials for it.

NSGA-II's generations are trial attributes: told trial number i belongs to generation
`i // population_size`. CMA-ES keeps its search distribution in trial attributes, so its study
is rebuilt by asking again, in request order and with the same seeds, for every point the
operation proposed, then telling the point actually measured with the attributes of that ask.

Over a list of points (`ListedPool`), a sampler's random start is replaced by drawing uniformly
from the free listed points: Optuna's start samples each parameter independently, which is not
uniform over a list covering part of the product of the domains. When the store holds results
outside the space (`transfer.py`), the first `TRANSFERRED` of the start take the free points
they rank best instead.

The start lasts `n_startup_trials` told results (the store's ones included, so a warm start
shortens it); by default the square root of the number of points, between 2 and 10: on a
space of 9 points a model after 10 random ones would come too late to matter, and below
random sampling without replacement there is nothing to lose, as the start is exactly that.
"""

from __future__ import annotations

import math
import random
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState, create_trial

from discospace.core import Entity
from discospace.explorer.operators.optuna_search.candidates import ListedPool, Pool
from discospace.explorer.operators.optuna_search.history import History, Source, Told
from discospace.explorer.operators.optuna_search.options import SearchOptions
from discospace.explorer.operators.optuna_search.samplers import (
    STATEFUL,
    SamplerKind,
    ask_seed,
    make_sampler,
)
from discospace.explorer.operators.optuna_search.space import SearchSpace
from discospace.explorer.operators.optuna_search.transfer import Transfer

CONSTRAINT = "constraints:is_valid"
NSGA2_GENERATION = "NSGAIISampler:generation"
ASKS = 4
"""How many times the sampler is asked before a taken suggestion is replaced by a free point."""
TRANSFERRED = 0.75
"""Share of the start-up that other spaces' results choose; the rest is random, so a task that
ranks one region of the space well and is wrong about another is checked against it (chosen
on seeds 1000-1019 of the fms table's cross-space benchmark, among 0.5, 0.75 and 1)."""
STARTUP = (2, 10)
"""Bounds of the default start-up: the square root of the number of points, within these
(Optuna's own 10 on large spaces; 2, so the model has a pair to compare). Which seeds it was
checked on was not recorded when it was chosen (commit 15aaa01); the fms table its figures are
reported on is the only fms-format table at hand, the one the other constants here were chosen
on too (with other seeds)."""


def default_startup(size: float) -> int:
    """Results before the model is used, for a search over `size` points (see above)."""
    low, high = STARTUP
    return high if math.isinf(size) else max(low, min(high, round(math.sqrt(size))))


@dataclass(frozen=True)
class Search:
    """Everything fixed about one operation's search."""

    kind: SamplerKind
    options: SearchOptions
    space: SearchSpace
    sources: tuple[Source, ...]
    pool: Pool
    seed: int
    transfer: Transfer | None = None
    """What the store's results outside the space say about its points (None: nothing)."""

    @property
    def startup(self) -> int:
        """Told results before the sampler uses its model."""
        given = self.options.n_startup_trials
        return given if given is not None else default_startup(self.pool.size())

    @property
    def directions(self) -> list[StudyDirection]:
        up, down = StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE
        return [up if s.direction == "max" else down for s in self.sources]


def suggest(
    search: Search, history: History, count: int, window: int | None = None
) -> list[Entity]:
    """Up to `count` free points to measure next (fewer when the pool runs out).

    With the operation's `window` (its `batch_size`), the n-th point requested (from 0) is
    chosen knowing the operation's first n - window + 1 results only (`told_as_of`): as many
    as a live explorer had when that point's slot in the window came free, one result after
    another. An explorer that was down while several results arrived decides, once it is back,
    as the one that stayed up would have: it knows them all at once, and chose its points
    knowing more than the live one did (another sequence of decisions for the same seed)."""
    if window is None:
        return _suggest(search, history, count)
    chosen: list[Entity] = []
    while len(chosen) < count:
        asked = len(history.requested) + len(chosen)
        known = _known(len(history.own), asked, window)
        run = 1
        while len(chosen) + run < count and _known(len(history.own), asked + run, window) == known:
            run += 1
        more = _suggest(search, told_as_of(history, known, tuple(chosen)), run)
        chosen.extend(more)
        if len(more) < run:
            break
    return chosen


def _known(results: int, asked: int, window: int) -> int:
    """How many of the operation's results the point numbered `asked` is chosen knowing."""
    return min(results, max(0, asked - window + 1))


def told_as_of(history: History, results: int, chosen: Sequence[Entity] = ()) -> History:
    """`history` as it was when the operation had only its first `results` results (the
    others in flight), with the points `chosen` since requested too."""
    own = history.own[:results]
    requested = (*history.requested, *chosen)
    told = {t.entity.id for t in own}
    in_flight = tuple(entity for entity in requested if entity.id not in told)
    return History(history.warm, own, in_flight, requested)


def _suggest(search: Search, history: History, count: int) -> list[Entity]:
    if _starting(search, history):
        transferred = _transferred(search, history, count)
        if transferred is None:
            return _uniform_free(search, len(history.requested), history.taken, count)
        rest = count - len(transferred)  # past the transferred share: random, as documented
        taken = history.taken | {entity.id for entity in transferred}
        return transferred + _uniform_free(search, len(history.requested), taken, rest)
    study = build_study(search, history)
    taken = history.taken
    chosen: list[Entity] = []
    for offset in range(count):
        entity = _ask_free(study, search, len(history.requested) + offset, taken)
        if entity is None:
            break
        _running(study, search, entity)
        chosen.append(entity)
        taken.add(entity.id)
    return chosen


def _starting(search: Search, history: History) -> bool:
    """Whether a sampler over listed points would still be in its random start.

    Optuna's samplers start by sampling each parameter at random, which over the product of
    the domains is not uniform over a list of points that covers part of it (a point whose
    values are rare would take the suggestions of all its empty neighbours). So over a
    `ListedPool`, until as many results are told as the sampler's start takes, the point is
    drawn uniformly from the free listed points instead.
    """
    if not isinstance(search.pool, ListedPool):
        return False
    options = search.options
    start = options.population_size if search.kind == "nsga2" else search.startup
    return len(history.told) < start


def _uniform_free(search: Search, ask: int, taken: set[str], count: int) -> list[Entity]:
    """`count` free listed points drawn uniformly, seeded by the first ask's number."""
    assert isinstance(search.pool, ListedPool)
    free = search.pool.free(taken)
    return random.Random(ask_seed(search.seed, ask)).sample(free, min(count, len(free)))


def _transferred(search: Search, history: History, count: int) -> list[Entity] | None:
    """The free listed points other spaces' results rank best (ties: seeded order), `count`
    of them or what is left of the transferred share of the start-up if fewer (a batch as wide
    as the start-up took every point from the transfer); None when there is nothing to
    transfer."""
    share = math.ceil(TRANSFERRED * search.startup)
    if search.transfer is None or len(history.requested) >= share:
        return None
    count = min(count, share - len(history.requested))
    assert isinstance(search.pool, ListedPool)
    free = search.pool.free(history.taken)
    random.Random(ask_seed(search.seed, len(history.requested))).shuffle(free)
    scores = search.transfer.scores(free, history.told)
    if scores is None:
        return None
    ranked = sorted(range(len(free)), key=lambda i: -scores[i])
    return [free[i] for i in ranked[:count]]


def build_study(search: Search, history: History) -> optuna.Study:
    """A study that knows the history: told points complete, points in flight running."""
    study = optuna.create_study(directions=search.directions)
    if STATEFUL[search.kind]:
        _replay(study, search, history)
        return study
    placeholder = _placeholder(history.told, len(search.sources))
    for number, told in enumerate(history.told):
        study.add_trial(_complete(search, told, placeholder, number))
    for entity in history.in_flight:
        _running(study, search, entity)
    return study


def _complete(search: Search, told: Told, placeholder: list[float], number: int) -> FrozenTrial:
    attrs: dict[str, object] = {CONSTRAINT: 0.0 if told.values is not None else 1.0}
    if search.kind == "nsga2":
        attrs[NSGA2_GENERATION] = number // search.options.population_size
    return create_trial(
        params=search.space.params(told.entity),
        distributions=search.space.distributions,
        values=list(told.values) if told.values is not None else placeholder,
        system_attrs=attrs,
    )


def _placeholder(told: Sequence[Told], objectives: int) -> list[float]:
    """The values an infeasible trial carries: the median of the feasible ones (see above)."""
    feasible = [t.values for t in told if t.values is not None]
    if not feasible:
        return [0.0] * objectives
    return [statistics.median(v[i] for v in feasible) for i in range(objectives)]


def _running(study: optuna.Study, search: Search, entity: Entity, **attrs: object) -> None:
    study.add_trial(
        create_trial(
            params=search.space.params(entity),
            distributions=search.space.distributions,
            state=TrialState.RUNNING,
            system_attrs=dict(attrs),
        )
    )


def _ask_free(study: optuna.Study, search: Search, ask: int, taken: set[str]) -> Entity | None:
    """The sampler's suggestion, or the nearest free point when it is taken."""
    tries = 1 if isinstance(search.pool, ListedPool) else ASKS
    suggestion = None
    for attempt in range(tries):
        suggestion = _suggestion(study, search, ask, attempt)
        if search.pool.admits(suggestion, taken):
            return suggestion
    if suggestion is None:
        return None
    return search.pool.nearest_free(suggestion, taken)


def _suggestion(study: optuna.Study, search: Search, ask: int, attempt: int) -> Entity:
    """One suggestion of a sampler seeded for this ask; the asked trial is dropped (failed)."""
    seed = ask_seed(search.seed, ask, attempt)
    study.sampler = make_sampler(search.kind, seed, search.options, search.startup)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trial = study.ask(search.space.distributions)
    study.tell(trial, state=TrialState.FAIL)
    return search.space.entity(trial.params)


def _replay(study: optuna.Study, search: Search, history: History) -> None:
    """CMA-ES: tell the warm start, then ask again for each point proposed, in order."""
    for told in history.warm:
        if told.values is not None:
            study.add_trial(_complete(search, told, [], 0))
    results = {told.entity.id: told for told in history.own}
    for ask, entity in enumerate(history.requested):
        attrs = _asked_attrs(study, search, ask)
        told = results.get(entity.id)
        if told is None:
            _running(study, search, entity, **attrs)
        elif told.values is not None:
            study.add_trial(_told_with(search, told, attrs))


def _asked_attrs(study: optuna.Study, search: Search, ask: int) -> dict[str, object]:
    """The sampler's state after asking the `ask`-th time (the suggestion is not used)."""
    _suggestion(study, search, ask, 0)
    return dict(study.get_trials(deepcopy=False)[-1].system_attrs)


def _told_with(search: Search, told: Told, attrs: dict[str, object]) -> FrozenTrial:
    assert told.values is not None
    return create_trial(
        params=search.space.params(told.entity),
        distributions=search.space.distributions,
        values=list(told.values),
        system_attrs={**attrs, CONSTRAINT: 0.0},
    )
