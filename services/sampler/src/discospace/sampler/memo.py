"""The memo: what the shared sample stores already hold, folded from `MeasurementCompleted`.

Key: (sample store, entity id, parameterized experiment id). A completed measurement is a
finding whether it is valid or not (an entity that ran out of memory will run out of memory
again), so both are kept, and an invalid one is never measured again.

When several completions share a key (two operations measured the same pair at once), the one
kept does not depend on the order they were folded in: valid before invalid, then the earliest,
then the smallest event id. A sampler that replays the topic after a restart (partitions read
in another interleaving) therefore reuses the very same measurement and emits the same events.
A later copy of the kept completion (same event id) changes nothing: the first copy wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from discospace.core.results import kept_rank
from discospace.events import MeasurementCompleted
from discospace.events.common import PropertyValues

MemoKey = tuple[str, str, str]
"""(sample store, entity id, parameterized experiment id)."""


@dataclass(frozen=True)
class Memo:
    """The part of a completed measurement the sampler needs to reuse it."""

    event_id: str
    request_id: str
    occurred_at: datetime
    is_valid: bool
    values: PropertyValues
    invalid_reason: str | None

    @classmethod
    def of(cls, event: MeasurementCompleted) -> Memo:
        return cls(
            event_id=event.event_id,
            request_id=event.request_id,
            occurred_at=event.occurred_at,
            is_valid=event.is_valid,
            values=dict(event.values),
            invalid_reason=event.invalid_reason,
        )

    def preferred_over(self, other: Memo) -> bool:
        """Whether this memo wins over `other` for the same key (see the module docstring)."""
        mine = kept_rank(self.is_valid, self.occurred_at, self.event_id)
        return mine < kept_rank(other.is_valid, other.occurred_at, other.event_id)


class MemoIndex:
    """Every completed measurement of every sample store, by key; one memo per key."""

    def __init__(self) -> None:
        self._memos: dict[MemoKey, Memo] = {}
        self._others: dict[MemoKey, set[str]] = {}
        """The requests that completed a key besides its memo's (a pair measured twice)."""
        self._folded: dict[MemoKey, set[str]] = {}
        """The event ids of the completions of a key that are not its memo (only for pairs
        completed more than once): a later copy of one is not folded again."""

    def record(self, event: MeasurementCompleted) -> bool:
        """Fold one completion in; True when it became the memo of its key."""
        key = (event.sample_store, event.entity_id, event.experiment_id)
        memo = Memo.of(event)
        current = self._memos.get(key)
        if current is not None and (
            current.event_id == memo.event_id or memo.event_id in self._folded.get(key, ())
        ):
            # a copy of a completion folded before (a redelivered request measured again
            # writes its own time and values under the same id): the first copy wins, as for
            # every other consumer; a later one read past the consumer's window of seen ids
            # replaced the memo, or won where the first had lost
            return False
        if current is not None and not memo.preferred_over(current):
            self._folded.setdefault(key, set()).add(memo.event_id)
            if current.request_id != memo.request_id:
                self._others.setdefault(key, set()).add(memo.request_id)
            return False
        if current is not None:
            self._folded.setdefault(key, set()).add(current.event_id)
        if current is not None and current.request_id != memo.request_id:
            self._others.setdefault(key, set()).add(current.request_id)
        self._memos[key] = memo
        return True

    def completed(self, key: MemoKey, request_id: str) -> bool:
        """Whether `request_id` itself completed `key`, kept as its memo or not (another
        operation's earlier result may be the one kept)."""
        memo = self._memos.get(key)
        if memo is None:
            return False
        return memo.request_id == request_id or request_id in self._others.get(key, ())

    def lookup(self, sample_store: str, entity_id: str, experiment_id: str) -> Memo | None:
        """The measurement `sample_store` holds for the entity and experiment, if any."""
        return self._memos.get((sample_store, entity_id, experiment_id))

    def __len__(self) -> int:
        return len(self._memos)
