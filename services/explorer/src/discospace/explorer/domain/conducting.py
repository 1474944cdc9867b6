"""Operators that run other operations (a pipeline): the view they decide from, and the round.

Most operators say what to measure next (`operator.py`); a *conductor* measures nothing
itself: it asks for child operations (`OperationRequested` naming it as their parent), submits
spaces to the registry (`SpaceSubmitted`), records its own steps as events of its operation
(`PipelineJobStarted`, `PipelineJobCompleted`, `PipelineJobFailed`) and ends like any operation
(`OperationCompleted`, `OperationFailed`). Its `conduct` is a pure function of a
`ConductorView`, so a restarted explorer folding the same log decides the same events with
the same ids.

The engine starts a conductor like any operation (the operator's `check`, the seed), then each
round: `conduct(view)` gives events, which are folded at once where they belong (its own
operation, or the child's), so the next round sees them.

A child operation may be decided by another explorer replica (operations are placed by id),
but every replica folds every operation's events, so the conductor's view of its children is
complete wherever it runs; a child's results are kept once it finished (`operation.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol, TypeAlias, TypeVar, runtime_checkable

from discospace.events import (
    MAX_MESSAGE_BYTES,
    Event,
    OperationCancelRequested,
    OperationCompleted,
    OperationFailed,
    OperationParameters,
    OperationRequested,
    OperationStarted,
    caused_event_id,
)
from discospace.explorer.domain.operation import (
    Conducting,
    JobFacts,
    JobKey,
    OperationState,
)
from discospace.explorer.domain.pairs import PairResult
from discospace.explorer.domain.spaces import KnownSpace, SpaceEntry

Conducted: TypeAlias = Conducting | OperationCompleted | OperationFailed
"""An event a conductor may decide."""

E = TypeVar("E", bound=Event)


def derived(cls: type[E], cause: Event, now: datetime, about: str, **fields: Any) -> E:
    """An event of type `cls` a conductor decides about `about` (a job, a child, a space),
    with an id derived from its start (`cause`), its type and `about`: deciding it again after
    a restart gives the same id, and every consumer drops the copy."""
    return cls(
        event_id=caused_event_id(cause.event_id, 0, f"{cls.type_name()}/{about}"),
        occurred_at=now,
        causation_id=cause.event_id,
        **fields,
    )


@dataclass(frozen=True)
class ChildView:
    """What a conductor sees of one of its child operations."""

    operation_id: str
    requested: OperationRequested | None
    started: OperationStarted | None
    cancel: OperationCancelRequested | None
    finished: OperationCompleted | OperationFailed | None
    results: tuple[PairResult, ...] | None
    """Its results once it finished and every result its end counted has been read, in the
    order of the measurements topic; None before."""
    jobs: Mapping[JobKey, JobFacts]
    """Its jobs, when it is a pipeline itself (a trial)."""

    @classmethod
    def of(cls, state: OperationState) -> ChildView:
        return cls(
            operation_id=state.operation_id,
            requested=state.requested,
            started=state.started,
            cancel=state.cancel,
            finished=state.finished,
            results=state.kept_results(),
            jobs=dict(state.jobs),
        )


@dataclass(frozen=True)
class ConductorView:
    """What a conductor decides from."""

    operation_id: str
    started: OperationStarted
    """Its start: the parameters in force (seed set) and its space."""
    cancel: OperationCancelRequested | None
    jobs: Mapping[JobKey, JobFacts]
    spaces: Mapping[str, SpaceEntry]
    """Every registered space (or why it cannot be used), by id."""
    rejected: Mapping[str, str]
    """Why the registry refused a submission, by submission id."""
    submitted: Mapping[str, datetime]
    """When this explorer sent a submission (since it started): not sent again while it
    waits for the answer, and a job waits for it `space_wait_s` from then."""
    child: Callable[[str], ChildView]
    """A child operation by id (an operation never requested is seen as such)."""
    prior: Callable[[str], tuple[PairResult, ...]]
    """For a child by id, the results of its space's sample store that other operations
    measured before it started: what an optimizer warm-starts from (`sample_store.py`)."""
    now: datetime
    space_wait_s: float
    """How long a job waits for a space it submitted before it fails."""
    max_message_bytes: int = MAX_MESSAGE_BYTES
    """The largest event the explorer publishes (its `max_message_bytes`): a job's result
    over it fails the job (not the whole round, as the engine's check would)."""

    @property
    def parameters(self) -> OperationParameters:
        return self.started.parameters

    @property
    def seed(self) -> int:
        seed = self.started.parameters.seed
        assert seed is not None, "an operation starts with its seed set"
        return seed

    def known_space(self, space_id: str) -> KnownSpace | None:
        entry = self.spaces.get(space_id)
        return entry if isinstance(entry, KnownSpace) else None


@dataclass
class Conduct:
    """A conductor's decisions for one round, in order, and when to decide again."""

    events: list[Conducted] = field(default_factory=list)
    wake_at: datetime | None = None

    def wake(self, at: datetime | None) -> None:
        if at is not None and (self.wake_at is None or at < self.wake_at):
            self.wake_at = at


@runtime_checkable
class Conductor(Protocol):
    """An operator that runs other operations: checked once, then asked every round."""

    name: ClassVar[str]

    def check(self, parameters: OperationParameters, space: KnownSpace) -> str | None:
        """Why it cannot run with these parameters on this space (one sentence), or None."""
        ...

    def conduct(self, view: ConductorView) -> Conduct:
        """Its next decisions."""
        ...
