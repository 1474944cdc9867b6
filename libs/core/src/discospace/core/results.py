"""The rules about an operation's results, written once (pure): every service reads them here.

- `Objective`: the property to optimise and its direction; `better`, `improves` (the first
  result to reach a value keeps it), `reached` (a target value).
- `objective_source`: which (experiment id, target) an objective's property means in a space.
- `result_value`: a result's value for an objective (valid results of its experiment only,
  finite numbers only, booleans excluded); `as_number` is the number test alone.
- `objective_points`: one point per entity once every objective's experiment answered for it.
- `pareto_front`: the points no other point beats on every objective, along the first one.
- `gives_up`: whether a failed measurement is failed for good.

Where an objective's values come from. An observed property id `<experiment id>.<target>` of
the space means that experiment's target. A bare target name means the first experiment, in
the measurement space's declared order, that measures it (so a space declaring `bench` before
`profile` reads `tps` from `bench`, whatever `profile` measures). Without the space (not known
to the reader yet), an observed property id is taken at its word and a bare target name means
nothing: no experiment can be told.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Literal, NamedTuple, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from discospace.core.canonical import beyond_64_bits
from discospace.core.errors import ExperimentError
from discospace.core.experiment import ParameterizedExperiment, split_observed_property_id


class Objective(BaseModel):
    """The property to optimise, and in which direction."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    property: str = Field(
        min_length=1,
        description="A target property, or an observed property id `<experiment>.<target>`.",
        examples=["train_tokens_per_second"],
    )
    direction: Literal["min", "max"] = Field(
        description="Whether smaller or larger is better.", examples=["max"]
    )

    def better(self, value: float, than: float) -> bool:
        """Whether `value` is strictly better than `than` in this direction."""
        return value > than if self.direction == "max" else value < than

    def improves(self, value: float | None, best: float | None) -> bool:
        """Whether `value` becomes the best: no best yet, or strictly better (ties keep the
        result that reached the value first)."""
        return value is not None and (best is None or self.better(value, best))

    def reached(self, best: float | None, target: float) -> bool:
        """Whether `best` is at least as good as `target`."""
        return best is not None and not self.better(target, best)


class ObjectiveSource(NamedTuple):
    """Where an objective's values come from: one experiment's target."""

    experiment_id: str
    target: str


def objective_source(name: str, observed_ids: Sequence[str] | None) -> ObjectiveSource | None:
    """The (experiment id, target) objective property `name` means; None when none measures it.

    `observed_ids` are the space's observed property ids in the measurement space's declared
    order (experiment after experiment), or None when the space is not known (see the module
    doc for the rule).
    """
    if observed_ids is None or name in observed_ids:
        return _split(name)
    for observed in observed_ids:
        source = _split(observed)
        if source is not None and source.target == name:
            return source
    return None


def target_of(name: str) -> str:
    """The target an objective property names: the part after the experiment id, if any."""
    source = _split(name)
    return name if source is None else source.target


def _split(name: str) -> ObjectiveSource | None:
    """An observed property id's (experiment id, target); None for a bare target name."""
    try:
        return ObjectiveSource(*split_observed_property_id(name))
    except ExperimentError:
        return None


class Result(Protocol):
    """One measurement result, as any reader holds it."""

    @property
    def entity_id(self) -> str: ...

    @property
    def experiment_id(self) -> str: ...

    @property
    def is_valid(self) -> bool: ...

    @property
    def values(self) -> Mapping[str, object]: ...


def kept_rank(is_valid: bool, occurred_at: datetime, event_id: str) -> tuple[bool, datetime, str]:
    """Where a result of a (sample store, entity, experiment) pair ranks for being the one the
    store keeps, smallest first: a valid one before an invalid one, then the earliest, then the
    smallest event id. One rule for every consumer that chooses (the sampler's memo, which
    every later request for the pair reuses, and the explorer's store, which optimizers are
    told): a total order, so the choice does not depend on the order results are read in."""
    return (not is_valid, occurred_at, event_id)


def as_number(raw: object) -> float | None:
    """`raw` as a finite number; None for anything else (booleans included, and a whole
    number beyond 64 bits, which no event field or store column holds: the store's summed-up
    progress never read one as a number, and the rows' did)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return None
    if beyond_64_bits(raw):
        return None
    return float(raw)


def result_value(result: Result, source: ObjectiveSource) -> float | None:
    """The result's value for the objective read at `source`; None when it has none.

    Only a valid result of the source experiment has one, and only a finite number counts.
    """
    if result.experiment_id != source.experiment_id or not result.is_valid:
        return None
    return as_number(result.values.get(source.target))


R = TypeVar("R", bound=Result)


@dataclass(frozen=True)
class ObjectivePoint(Generic[R]):
    """One entity with a result for every objective: their values, or None when one has none
    (an invalid result, a missing or non-numeric value: the point is infeasible)."""

    entity_id: str
    results: tuple[R, ...]
    """The result read for each objective, in the objectives' order."""
    values: tuple[float, ...] | None


def objective_points(
    results: Iterable[R],
    sources: Sequence[ObjectiveSource],
    needs: Mapping[str, Sequence[ObjectiveSource]] | None = None,
) -> list[ObjectivePoint[R]]:
    """A point per entity once every source experiment has a result for it, in that order.

    The first result of each (entity, experiment) counts; results of other experiments are
    not read. Read in the order results arrived, points come in the order they completed.

    `needs`: per dependent experiment, the observed values it reads from other experiments
    (`ParameterizedExperiment.required_observed`, as sources). A dependent experiment never runs
    for an entity whose experiment it reads from gave no valid result with that value (the
    explorer skips it): that result stands in for it, so the point is infeasible when the
    result arrives, rather than never complete (an out-of-memory configuration was never told
    to an optimizer whose objective a dependent experiment measures).
    """
    needed = {source.experiment_id for source in sources}
    blocks = objective_blocks(needs or {}, needed)
    seen: dict[str, dict[str, R]] = {}
    points: list[ObjectivePoint[R]] = []
    for result in results:
        answered = seen.setdefault(result.entity_id, {})
        if len(answered) == len(needed):
            continue  # the entity's point is out
        if result.experiment_id in needed:
            answered.setdefault(result.experiment_id, result)
        for blocked in blocked_objectives(result, blocks):
            answered.setdefault(blocked, result)
        if len(answered) == len(needed):
            points.append(_point(result.entity_id, answered, sources))
    return points


def objective_needs(
    experiments: Iterable[ParameterizedExperiment],
) -> dict[str, tuple[ObjectiveSource, ...]]:
    """Per dependent experiment, the (experiment, target) values it reads: the `needs` of
    `objective_points` for a measurement space's experiments."""
    return {
        experiment.id: tuple(
            ObjectiveSource(*split_observed_property_id(observed))
            for observed in experiment.required_observed
        )
        for experiment in experiments
        if experiment.is_dependent
    }


Blocks = dict[str, list[tuple[str, frozenset[str]]]]
"""Per experiment read from: (target read, objective experiments that then cannot run)."""


def objective_blocks(
    needs: Mapping[str, Sequence[ObjectiveSource]], experiments: Iterable[str]
) -> Blocks:
    """Which results keep which of `experiments` from running (see `objective_points`: `needs`
    is what each dependent experiment reads), transitively. A space has no cycle (refused)."""
    needed = set(experiments)
    downstream: dict[str, set[str]] = {}

    def reached(experiment: str, trail: frozenset[str]) -> set[str]:
        if experiment in downstream:
            return downstream[experiment]
        found = {experiment} & needed
        for dependent, reads in needs.items():
            if dependent not in trail and any(s.experiment_id == experiment for s in reads):
                found |= reached(dependent, trail | {dependent})
        downstream[experiment] = found
        return found

    blocks: Blocks = {}
    for dependent, reads in needs.items():
        stopped = frozenset(reached(dependent, frozenset({dependent})))
        for source in reads:
            if stopped:
                blocks.setdefault(source.experiment_id, []).append((source.target, stopped))
    return blocks


def blocked_objectives(result: Result, blocks: Blocks) -> set[str]:
    """The experiments of `blocks` that `result` keeps from running for its entity: it gave
    no valid value of a target they read (directly or through another dependent one)."""
    stopped: set[str] = set()
    for target, experiments in blocks.get(result.experiment_id, ()):
        if not result.is_valid or target not in result.values:
            stopped |= experiments
    return stopped


def _point(
    entity: str, answered: Mapping[str, R], sources: Sequence[ObjectiveSource]
) -> ObjectivePoint[R]:
    read = tuple(answered[source.experiment_id] for source in sources)
    values = [result_value(result, source) for result, source in zip(read, sources, strict=True)]
    feasible = tuple(v for v in values if v is not None)
    return ObjectivePoint(entity, read, feasible if len(feasible) == len(values) else None)


def pareto_front(points: Sequence[Sequence[float]], objectives: Sequence[Objective]) -> list[int]:
    """Indices of the points no other point beats on every objective, ordered along the first.

    A point is dominated by another at least as good on every objective and not equal to it
    (equal points are on the front together). The order is by the first objective's value,
    smallest first, stable for equal values.
    """
    signs = [1.0 if objective.direction == "max" else -1.0 for objective in objectives]
    scored = [tuple(v * s for v, s in zip(point, signs, strict=True)) for point in points]

    def dominated(a: tuple[float, ...]) -> bool:
        return any(b != a and all(x >= y for x, y in zip(b, a, strict=True)) for b in scored)

    front = [i for i, score in enumerate(scored) if not dominated(score)]
    return sorted(front, key=lambda i: points[i][0])


MAX_ATTEMPT = 65_535
"""The last attempt of any measurement, whatever `max_retries` says (the store keeps an
attempt in 16 bits)."""


def gives_up(retryable: bool, attempt: int, max_retries: int) -> bool:
    """Whether a measurement whose attempt `attempt` failed is failed for good.

    It is when the failure cannot be retried, or when `max_retries` retries are spent
    (attempt 1 is the first try, so attempt `max_retries + 1` is the last), or `MAX_ATTEMPT`.
    """
    return not retryable or attempt > max_retries or attempt >= MAX_ATTEMPT
