"""What other spaces' results say about this space's points: a ranking-weighted transfer.

The store may hold results of the same experiment on entities outside the space
(`OperationView.store_elsewhere`): the same fine-tuning grid for another model, the same
batch sizes on another GPU. Each such result splits into its *context* (the values of the
properties the space does not have, or whose value is outside the space's domain: "model =
llama-70b"; and which of the space's properties it lacks) and its *shared* values (those inside
the space). Results with the same context
form one source *task*; a task's result speaks for every point of the space that agrees with
its shared values.

Within a task, values are only compared with each other (a 70B model is ten times slower than
a 7B one, and the ranking of configurations is what carries over): each valid value is scaled
to [0, 1] between the task's worst and best, an invalid result (out of memory) scores
`INVALID`, below every valid one. A point's transferred score is the weighted mean of the
tasks' scores for it, each task weighted by how much better than chance it ranks the pairs of
points this operation already knows: its fraction of concordant pairs, with `PRIOR` pairs of
which two thirds concordant added (so a task is trusted before any pair is known, and one
discordant pair is enough to doubt it), minus 1/2, floored at 0: the two-stage transfer
surrogate of Wistuba, Schilling and Schmidt-Thieme (2016), with Kendall-style pair counts as
its weights. Where the trusted tasks disagree about a point, it scores their weighted mean plus
`OPTIMISM` weighted standard deviations (an upper confidence bound over the tasks): what one
source ranks best and another cannot run at all (a batch size that is the fastest for 7B models
and out of memory for 70B ones) is uncertain for this space, and worth a measurement before a
point every task calls good but none calls best. A point no task speaks for scores the tasks'
weighted mean score (neither preferred nor avoided). When every task ranks the known points no
better than chance, there is nothing to transfer: the start is random again.

The score replaces the sampler's random start-up (`study.py`): the start-up points are the
free points with the best transferred scores (ties broken by the operation's seed), then the
sampler's model takes over with every result told, so a misleading task costs at most the
start-up the cold search spends at random anyway.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from discospace.core import Entity, EntitySpace, ObjectiveSource, objective_points
from discospace.core.canonical import Value
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.operators.optuna_search.history import Source, Told

INVALID = -0.5
"""The scaled score of an invalid result: below the task's worst valid one (0)."""
PRIOR = (2, 3)
"""(concordant, pairs) every task starts with: trusted (2/3) until pairs say otherwise."""
OPTIMISM = 0.75
"""Weighted standard deviations across the tasks added to a point's mean score (see above).

Chosen on seeds 1000-1019 and 2000-2039 of the fms table's cross-space benchmark (never on the
seeds it reports, 0-19), among 0, 0.25, 0.5, 0.75, 1, 1.25, 1.5 and 2: from 0.25 to 1 every
model's warm median is within one measurement of its cold one; 0 misses on one model (a small
model whose best batch size runs out of memory for the large ones: 6 against 5); from 1.25 the
optimism leads a 70B model into the batch sizes only small models can run (12 to 20.5 against 2).
0.75 is the middle of the good range."""

Context = tuple[tuple[tuple[str, Value], ...], tuple[str, ...]]
"""(the values of the properties the space does not have, or outside its domain; the space's
properties the result does not have)."""


@dataclass(frozen=True)
class Task:
    """The results of one context, scaled, as (shared values, score) pairs."""

    context: Context
    results: tuple[tuple[dict[str, Value], float], ...]

    def score(self, point: Entity) -> float | None:
        """The mean score of this task's results that agree with `point` (None: none do)."""
        scores = [s for shared, s in self.results if _agrees(shared, point)]
        return statistics.fmean(scores) if scores else None

    @property
    def mean(self) -> float:
        return statistics.fmean(s for _, s in self.results)


@dataclass(frozen=True)
class Transfer:
    """The source tasks of an operation, read from the store outside its space."""

    tasks: tuple[Task, ...]
    direction: str

    def scores(self, points: Sequence[Entity], told: Sequence[Told]) -> list[float] | None:
        """The transferred score of each point, tasks weighted by how they rank `told`; None
        when no task ranks them better than chance."""
        weights = [task_weight(task, told, self.direction) for task in self.tasks]
        total = sum(weights)
        if total <= 0:
            return None
        neutral = sum(w * t.mean for w, t in zip(weights, self.tasks, strict=True)) / total
        return [self._score(point, weights, neutral) for point in points]

    def _score(self, point: Entity, weights: list[float], neutral: float) -> float:
        """The weighted mean of the trusted tasks that speak for `point`; `neutral` when none
        does (a task weighted 0 is not heard, even when it is the only one speaking)."""
        weighted = [
            (w, s)
            for w, s in ((w, t.score(point)) for w, t in zip(weights, self.tasks, strict=True))
            if s is not None and w > 0
        ]
        if not weighted:
            return neutral
        total = sum(w for w, _ in weighted)
        mean = sum(w * s for w, s in weighted) / total
        spread = math.sqrt(sum(w * (s - mean) ** 2 for w, s in weighted) / total)
        return mean + OPTIMISM * spread


def transfer_of(
    elsewhere: Sequence[PairResult],
    source: Source,
    entity_space: EntitySpace,
    needs: Mapping[str, Sequence[ObjectiveSource]] | None = None,
) -> Transfer | None:
    """The tasks the results `elsewhere` form for one objective; None when no task has two
    results (nothing to rank). `needs`: what the space's dependent experiments read
    (`objective_points`)."""
    grouped: dict[Context, list[tuple[dict[str, Value], float | None]]] = defaultdict(list)
    for point in objective_points(elsewhere, [source.at], needs):
        values = point.results[0].entity_values
        context, shared = _split(values, entity_space)
        value = point.values[0] if point.values is not None else None
        grouped[context].append((shared, value))
    tasks = [_task(c, r, source.direction) for c, r in sorted(grouped.items(), key=_by_context)]
    kept = tuple(task for task in tasks if task is not None)
    return Transfer(kept, source.direction) if kept else None


def _by_context(item: tuple[Context, object]) -> str:
    return repr(item[0])


def _split(values: dict[str, Value], entity_space: EntitySpace) -> tuple[Context, dict[str, Value]]:
    """(context, shared values) of a result from outside the space. A property of the space
    the result does not have is part of its context too: results of another set of properties
    are another setup (a rig whose GPU count is no property), another task, not values to
    scale with those of the setup that has it."""
    context, shared = [], {}
    names = set(entity_space.names)
    for name, value in sorted(values.items()):
        inside = name in names and entity_space.get_property(name).domain.normalise(value)
        if name in names and inside is not None:
            shared[name] = entity_space.get_property(name).domain.normalise(value)
        else:
            context.append((name, value))
    missing = tuple(sorted(names - set(values)))
    return (tuple(context), missing), shared


def _task(
    context: Context, results: list[tuple[dict[str, Value], float | None]], direction: str
) -> Task | None:
    valid = [v for _, v in results if v is not None]
    if len(results) < 2 or not valid:
        return None
    low, high = min(valid), max(valid)
    span = (high - low) or 1.0
    sign = 1.0 if direction == "max" else -1.0

    def scaled(value: float | None) -> float:
        if value is None:
            return INVALID
        return (value - low) / span if sign > 0 else (high - value) / span

    return Task(context, tuple((shared, scaled(value)) for shared, value in results))


def _agrees(shared: dict[str, Value], point: Entity) -> bool:
    return all(point.get(name) == value for name, value in shared.items())


def task_weight(task: Task, told: Sequence[Told], direction: str) -> float:
    """How much better than chance a task ranks the pairs of told points it speaks for (see
    above); invalid told points rank below every valid one."""
    known = [(s, _told_rank(t, direction)) for t in told if (s := task.score(t.entity)) is not None]
    concordant = pairs = 0
    for i, (score_a, value_a) in enumerate(known):
        for score_b, value_b in known[i + 1 :]:
            if value_a == value_b or score_a == score_b:
                continue
            pairs += 1
            concordant += (score_a > score_b) == (value_a > value_b)
    agreed, seen = PRIOR
    return max(0.0, (concordant + agreed) / (pairs + seen) - 0.5)


def _told_rank(told: Told, direction: str) -> float:
    """A told point's value for ranking, larger is better; an invalid point ranks last."""
    if told.values is None:
        return float("-inf")
    return told.values[0] if direction == "max" else -told.values[0]
