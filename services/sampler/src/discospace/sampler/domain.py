"""The sampler's state and its one decision, pure (no Kafka, clock or randomness).

State is four folds: registered spaces (to draw from), pools (to route to), the memo of every
sample store (to reuse from) and the first request of each operation and request index (the
only one answered, `first.py`). `decide` answers one `SamplesRequested` with the events of
`discospace.sampler.answers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from discospace.events import (
    ActuatorRegistered,
    MeasurementCompleted,
    SamplesRequested,
    SpaceRegistered,
)
from discospace.sampler.answers import Answer, Context, answer
from discospace.sampler.drawing import SpaceBook, draw_entities
from discospace.sampler.first import FirstRequests
from discospace.sampler.memo import MemoIndex
from discospace.sampler.routing import PoolDirectory


class UnknownSpaceError(LookupError):
    """A request names a space the sampler has not seen registered (yet)."""

    def __init__(self, space_id: str) -> None:
        super().__init__(f"space '{space_id}' is not registered (or not read yet)")
        self.space_id = space_id


@dataclass
class SamplerState:
    """What the sampler folded: spaces, pools, the memo of the sample stores, first requests."""

    spaces: SpaceBook = field(default_factory=SpaceBook)
    pools: PoolDirectory = field(default_factory=PoolDirectory)
    memo: MemoIndex = field(default_factory=MemoIndex)
    requests: FirstRequests = field(default_factory=FirstRequests)


def evolve_space(state: SamplerState, event: SpaceRegistered) -> None:
    state.spaces.record(event)


def evolve_pools(state: SamplerState, event: ActuatorRegistered) -> None:
    state.pools.record(event)


def evolve_memo(state: SamplerState, event: MeasurementCompleted) -> bool:
    """Fold one completion into the memo; True when it became the memo of its pair."""
    return state.memo.record(event)


def decide(state: SamplerState, request: SamplesRequested, now: datetime) -> list[Answer]:
    """The answer to one request for samples; raises `UnknownSpaceError` for an unseen space."""
    space = state.spaces.get(request.space_id)
    if space is None:
        raise UnknownSpaceError(request.space_id)
    drawn = draw_entities(request, space)
    context = Context(request, space.sample_store, now)
    return answer(context, drawn, state.memo, state.pools)
