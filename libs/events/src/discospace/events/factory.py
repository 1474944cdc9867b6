"""Building events: new facts get a random id, caused facts an id derived from their cause.

Events never read a clock themselves: the caller passes one (the runtime's, or a fixed one in
tests), so the domain and its tests stay deterministic.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from discospace.events.envelope import Event

E = TypeVar("E", bound=Event)
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The wall clock, in UTC: the default clock of services."""
    return datetime.now(UTC)


def new_event(cls: type[E], clock: Clock = utc_now, **fields: Any) -> E:
    """A fact nothing else caused (a person's request, a worker's announcement): fresh uuid4 id."""
    return cls(event_id=str(uuid.uuid4()), occurred_at=clock(), **fields)


def caused_event(
    cls: type[E], cause: Event, clock: Clock = utc_now, index: int = 0, **fields: Any
) -> E:
    """The `index`-th event of type `cls` caused by `cause`, with an id derived from it.

    Handling the same cause twice gives the same event id, so consumers drop the duplicate.
    """
    return cls.caused_by(cause, clock(), index, **fields)
