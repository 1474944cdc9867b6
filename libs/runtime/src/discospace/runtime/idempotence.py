"""The floor of idempotent consumption: a bounded memory of the event ids already handled.

Delivery is at least once, so a handler may see an event twice (after a rebalance, or when a
commit was lost). A service's real dedup comes from its folded state; this set drops the
common, recent duplicates cheaply and forgets the oldest ids first.
"""

from __future__ import annotations

from collections import OrderedDict


class SeenEventIds:
    """Remembers up to `capacity` event ids, forgetting the least recently seen first."""

    def __init__(self, capacity: int = 100_000) -> None:
        if capacity < 1:
            raise ValueError(f"A seen-ids set needs a capacity of at least 1, not {capacity}.")
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def first_time(self, event_id: str) -> bool:
        """True the first time `event_id` is offered (and remember it); False for a repeat."""
        if event_id in self._ids:
            self._ids.move_to_end(event_id)
            return False
        self._ids[event_id] = None
        if len(self._ids) > self.capacity:
            self._ids.popitem(last=False)
        return True

    def forget(self, event_id: str) -> None:
        """Forget `event_id`, e.g. when its handler failed and it must be handled again."""
        self._ids.pop(event_id, None)
