"""The operator interface: a pure decide function over an operation's state.

The operators themselves (random walk, Zeus, Optuna) live in `discospace.explorer.operators`.

The explorer's engine (`decide.py`) owns everything operators share: the concurrency window,
retries with backoff, dependent experiments, stopping rules, cancellation, best-so-far and
completion. An operator only says what to explore next, from an `OperationView`:

- `Draw(count)`: `count` more entities by the operation's sampling strategy (random walk, grid);
- `Measure(points)`: these entities, as property values (an optimizer's suggestions);
- `Wait()`: nothing now; decide again when a result arrives;
- `Finish(reason, detail)`: nothing more; the operation completes once what is in flight lands.

An operator that settles on one configuration (`zeus_bso`) is also a `Chooser`: when the
operation completes, whatever stopped it, the engine asks it what it chose and reports it in
`OperationCompleted.choice`.

`propose` must be a function of the view (seeds come from `view.parameters.seed`), so that a
restarted explorer proposes the same thing. It is asked after every change, with the number of
free slots in the window; asking for more than `free_slots` entities is trimmed to them.
An operator may cache what it rebuilds from `view.outcomes` (e.g. an optimizer's model), keyed
by operation id and the number of outcomes read, as long as the result stays the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeAlias, runtime_checkable

from discospace.core import DiscospaceError, blocked_objectives, objective_blocks
from discospace.events import OperationParameters
from discospace.events.common import PropertyValues
from discospace.events.operations import OperatorChoice, StopReason
from discospace.explorer.domain.objective import Best
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace

if TYPE_CHECKING:
    from discospace.explorer.domain.conducting import Conductor


@dataclass(frozen=True)
class OperationView:
    """What an operator sees of its operation when it decides."""

    operation_id: str
    parameters: OperationParameters
    """The parameters in force: the seed is always set."""
    space: KnownSpace
    started_at: datetime
    now: datetime
    free_slots: int
    """Entities that may be requested now without exceeding `batch_size` in flight."""
    in_flight: int
    """Entities requested and not settled yet (waiting for a draw, a result or a retry)."""
    drawn_by_strategy: int
    """Entities asked for with `Draw` so far: the position of the next draw."""
    entities_drawn: int
    """Entities the sampler actually drew for `Draw` requests (fewer at the end of a space)."""
    exhausted: bool
    """The sampler reported that the strategy's sequence has no entity left."""
    entities: Mapping[str, PropertyValues | None]
    """Every entity of the operation by id, with its values once a measurement named them."""
    outcomes: Sequence[PairResult]
    """Results so far, in the order they arrived (the same on every replay)."""
    best: Best | None
    """The best entity for the objective so far (None without an objective or result)."""
    store_results: Sequence[PairResult] = ()
    """Results of the space's sample store that other operations measured before this one
    started (valid and invalid), for the space's entities and experiments, oldest first: what
    an optimizer warm-starts from (see `sample_store.py`)."""
    store_elsewhere: Sequence[PairResult] = ()
    """Results of the space's sample store, for the space's experiments, on entities OUTSIDE the
    space (other values, or another set of properties), that other operations measured before
    this one started, oldest first: what an optimizer learns from across spaces, never reuses."""
    unsettled: frozenset[str] = frozenset()
    """Ids of the entities counted in `in_flight` that a draw named (a result or a retry to
    come): not those that failed for good, which no result will settle."""
    request_controls: Callable[[str, str], PropertyValues | None] = field(
        default=lambda entity_id, experiment_id: None, compare=False
    )
    """The inputs (run controls) the first request of an (entity id, experiment id) pair
    carried, `{}` for none; None when the request is not known (a view built by hand): what
    was asked of a run, where its result may say more (a replayed run names the power limit
    it trained at whether it profiled or not)."""


@dataclass(frozen=True)
class Draw:
    """`count` more entities by the operation's sampling strategy."""

    count: int


@dataclass(frozen=True)
class Measure:
    """These entities (property values of the operation's space).

    `inputs`, when given, holds one mapping per point: run controls the operator passes to the
    measurement (e.g. Zeus's `cost_limit`), kept for the point's retries.
    """

    points: tuple[PropertyValues, ...]
    inputs: tuple[PropertyValues, ...] = ()


@dataclass(frozen=True)
class Wait:
    """Nothing to request now."""


@dataclass(frozen=True)
class Finish:
    """Nothing more to request: complete once what is in flight has landed."""

    reason: StopReason
    detail: str


Proposal: TypeAlias = Draw | Measure | Wait | Finish

MAX_FAILED_FOR_GOOD = 10
"""Entities failed for good (no result, retries spent) after which an operator that chooses
its points gives up, once they outnumber the entities with a result: a failure tells a model
nothing, so it would propose point after point on a pool that cannot measure them (forever on
a continuous space, where a budget of measurements counts only results)."""


def give_up_when_failing(view: OperationView) -> None:
    """Raise `DiscospaceError` when the operation's measurements keep failing for good. An
    entity is answered once every experiment of the space has a result for it, or cannot run
    (an experiment it reads from gave no valid result): one whose dependent experiment failed
    for good told its objective nothing either, though `bench` had measured it."""
    experiments = {experiment.id for experiment in view.space.experiments}
    blocks = objective_blocks(view.space.needs, experiments)
    settled: dict[str, set[str]] = {}
    for outcome in view.outcomes:
        got = settled.setdefault(outcome.entity_id, set())
        got.add(outcome.experiment_id)
        got |= blocked_objectives(outcome, blocks)
    answered = [entity for entity, got in settled.items() if got >= experiments]
    failed = len(view.entities) - len(answered) - view.in_flight
    if failed >= MAX_FAILED_FOR_GOOD and failed > len(answered):
        raise DiscospaceError(
            f"{failed} of its {len(view.entities)} entities failed for good, without a result: "
            "the measurements keep failing (their reasons say why)"
        )


@runtime_checkable
class Operator(Protocol):
    """An operator: checks its parameters once, then proposes what to explore next."""

    name: ClassVar[str]

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        """Why this operator cannot run with these parameters on this space (one sentence),
        or None when it can."""
        ...

    def propose(self, view: OperationView) -> Proposal:
        """What to explore next."""
        ...


@runtime_checkable
class Chooser(Protocol):
    """An operator that settles on one configuration: what it chose, at the operation's end."""

    def choice(self, view: OperationView) -> OperatorChoice | None:
        """What it chose by now, with the costs behind it; None when it cannot tell. Must not
        raise: the operation completes all the same."""
        ...


class OperatorRegistry:
    """The operators the explorer knows, by name: those that propose what to measure
    (`Operator`) and those that run other operations (`Conductor`, `conducting.py`)."""

    def __init__(self, operators: Sequence[Operator | Conductor] = ()) -> None:
        self._operators: dict[str, Operator | Conductor] = {}
        for operator in operators:
            self.add(operator)

    def add(self, operator: Operator | Conductor) -> None:
        self._operators[operator.name] = operator

    def get(self, name: str) -> Operator | Conductor | None:
        return self._operators.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._operators))
