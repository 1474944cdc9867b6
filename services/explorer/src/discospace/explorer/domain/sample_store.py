"""What the shared sample stores hold, as the explorer learns it from the measurements topic.

Every `MeasurementCompleted` (valid or invalid, from any operation) is a result of its sample
store. An optimizer warm-starts from them: before its first ask it is told every result of its
space's store that it did not pay for, so it never measures what anyone measured before.

Which results an operation sees must not depend on when the explorer happened to read them, or
a restarted explorer would decide differently. So an operation sees the results that occurred
before it started (the measurement's `occurred_at` against `OperationStarted.occurred_at`),
for its space's entities and experiments, from other operations, in the order of their
`occurred_at` (then event id). Replaying the topics gives the same set; only a result still in
transit when the operation started (it occurred before, and was read after) is missed live and
seen after a restart, which can change decisions not yet taken, never those taken. The store
keeps one result per pair, as the sampler's memo does (a valid one before an invalid one, then
the earliest): a valid result measured after the operation started replaces an invalid one from
before, which then leaves the operation's view (the sampler would reuse the valid one for it).

`results_elsewhere` applies the same rule to the store's results for the space's experiments on
entities OUTSIDE the space (other values of a property, or another set of properties): what a
model-based optimizer learns from across spaces (e.g. the same fine-tuning grid for another
model), never what it measures or reuses.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime

from discospace.core.results import kept_rank
from discospace.events import MeasurementCompleted
from discospace.explorer.domain.pairs import PairKey, PairResult
from discospace.explorer.domain.spaces import KnownSpace


@dataclass(frozen=True)
class StoredResult:
    """One result of a sample store, with who measured it and when."""

    outcome: PairResult
    operation_id: str
    occurred_at: datetime
    event_id: str

    @property
    def order(self) -> tuple[datetime, str]:
        return self.occurred_at, self.event_id


Change = tuple["StoredResult | None", "StoredResult"]
"""One change of a store's results: the result it replaced (None for a new pair), the new one."""


TRIM_EVERY = 10_000
"""Changes a store gathers before it drops those every view has read (also done whenever an
operation ends): a long operation's views read on at each decision, so few are kept."""


def _order(result: StoredResult) -> tuple[datetime, str]:
    return result.order


def _preferred(result: StoredResult, known: StoredResult) -> bool:
    """Whether `result` is kept for its pair over `known`: valid before invalid, then the
    earliest, then the smallest event id, the rule of the sampler's memo, whose result every
    later request for the pair reuses. Kept by time alone, a pair that ran out of memory once
    and was measured fine later was told to an optimizer as infeasible, never proposed, while
    the store reuses its valid result (in any order of folding: the rule is a total order)."""
    mine = kept_rank(result.outcome.is_valid, result.occurred_at, result.event_id)
    return mine < kept_rank(known.outcome.is_valid, known.occurred_at, known.event_id)


@dataclass
class _Store:
    results: dict[PairKey, StoredResult] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    """The changes of `results` some view has not read yet, in order (none while no view
    exists: a view made later reads `results` whole)."""
    first_change: int = 0
    """The number of the first change in `changes`: those before it were read by every view."""
    kept: int = 0
    """How many changes a view still had to read after the last drop: the next drop is tried
    `TRIM_EVERY` changes later (not at every change while a view lags)."""

    @property
    def change_count(self) -> int:
        """How many changes the store has had that a view may have read."""
        return self.first_change + len(self.changes)

    def changes_since(self, read: int) -> list[Change]:
        return self.changes[read - self.first_change :]

    def drop_changes_before(self, read: int) -> None:
        """Forget the changes before number `read` (every view has read them)."""
        cut = read - self.first_change
        if cut > 0:
            del self.changes[:cut]
            self.first_change = read
        self.kept = len(self.changes)


@dataclass
class _Chosen:
    """One operation's view of a store: the results that occurred before `started_at`, from
    other operations, for the space's experiments, on entities inside the space (or outside
    it), oldest first. Made by one pass over the store; then kept up to date change by change,
    so a decision costs what changed since the last one, not a pass over the whole store."""

    space: KnownSpace
    operation_id: str
    started_at: datetime
    inside: bool
    read: int = 0
    """How many of the store's changes this view has read."""
    entries: list[StoredResult] = field(default_factory=list)
    """The results shown, oldest first (ordered by `StoredResult.order`, unique per store)."""
    shown: tuple[PairResult, ...] = ()
    """The outcomes of `entries`."""
    experiments: set[str] = field(init=False)
    names: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.experiments = {experiment.id for experiment in self.space.experiments}
        self.names = set(self.space.entity_space.names)

    @classmethod
    def of(
        cls, store: _Store, space: KnownSpace, operation_id: str, started_at: datetime, inside: bool
    ) -> _Chosen:
        """The view of `store` as it is now."""
        view = cls(space, operation_id, started_at, inside, read=store.change_count)
        view.entries = sorted(filter(view._shows, store.results.values()), key=_order)
        view.shown = tuple(entry.outcome for entry in view.entries)
        return view

    def read_on(self, store: _Store) -> tuple[PairResult, ...]:
        """The store's results this view shows, oldest first."""
        changed = False
        for replaced, result in store.changes_since(self.read):
            if replaced is not None and self._shows(replaced):
                self._remove(replaced)
                changed = True
            if self._shows(result):
                bisect.insort(self.entries, result, key=_order)
                changed = True
        self.read = store.change_count
        if changed:
            self.shown = tuple(entry.outcome for entry in self.entries)
        return self.shown

    def _remove(self, result: StoredResult) -> None:
        at = bisect.bisect_left(self.entries, result.order, key=_order)
        if at < len(self.entries) and self.entries[at] is result:
            del self.entries[at]

    def _shows(self, result: StoredResult) -> bool:
        outcome = result.outcome
        return (
            result.occurred_at < self.started_at
            and result.operation_id != self.operation_id
            and outcome.experiment_id in self.experiments
            and _in_space(self.space, outcome, self.names) == self.inside
        )


@dataclass
class SampleStores:
    """Results by sample store: one per entity and experiment (a valid one before an invalid
    one, then the first measured by `occurred_at`: `_preferred`)."""

    stores: dict[str, _Store] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    _cache: dict[tuple[str, str, bool], _Chosen] = field(default_factory=dict)

    def knows(self, event: MeasurementCompleted) -> bool:
        return event.event_id in self.seen

    def record(self, event: MeasurementCompleted) -> None:
        """Fold a result; one result of an (entity, experiment) pair is kept, by the rule of the
        sampler's memo (`_preferred`)."""
        if event.event_id in self.seen:
            return
        self.seen.add(event.event_id)
        store = self.stores.get(event.sample_store)
        if store is None:  # built only for a new store: this runs for every result folded
            store = self.stores[event.sample_store] = _Store()
        result = StoredResult(
            PairResult.of(event), event.operation_id, event.occurred_at, event.event_id
        )
        key = (event.entity_id, event.experiment_id)
        known = store.results.get(key)
        if known is None or _preferred(result, known):
            store.results[key] = result
            if self._cache:  # without a view, no one reads the changes
                store.changes.append((known, result))
                if len(store.changes) >= store.kept + TRIM_EVERY:
                    self._trim(event.sample_store, store)

    def results_for(
        self, space: KnownSpace, operation_id: str, started_at: datetime
    ) -> tuple[PairResult, ...]:
        """Results of the space's store an operation started at `started_at` may reuse."""
        return self._results(space, operation_id, started_at, inside=True)

    def results_elsewhere(
        self, space: KnownSpace, operation_id: str, started_at: datetime
    ) -> tuple[PairResult, ...]:
        """Results of the space's store, for its experiments, on entities outside the space,
        that an operation started at `started_at` may learn from (same rule as `results_for`)."""
        return self._results(space, operation_id, started_at, inside=False)

    def _results(
        self, space: KnownSpace, operation_id: str, started_at: datetime, *, inside: bool
    ) -> tuple[PairResult, ...]:
        store = self.stores.get(space.sample_store)
        if store is None:
            return ()
        key = (operation_id, space.space_id, inside)
        view = self._cache.get(key)
        if view is None or view.started_at != started_at or view.space is not space:
            view = self._cache[key] = _Chosen.of(store, space, operation_id, started_at, inside)
            return view.shown
        return view.read_on(store)

    def forget(self, operation_id: str) -> None:
        """Drop the views of a finished operation, and the changes no view still has to read."""
        for key in [key for key in self._cache if key[0] == operation_id]:
            del self._cache[key]
        for name, store in self.stores.items():
            self._trim(name, store)

    def _trim(self, name: str, store: _Store) -> None:
        """Drop the changes of store `name` that every view of it has read."""
        reads = [view.read for view in self._cache.values() if view.space.sample_store == name]
        store.drop_changes_before(min(reads, default=store.change_count))


def _in_space(space: KnownSpace, outcome: PairResult, names: set[str]) -> bool:
    """Whether `outcome`'s entity is one of `space`'s (`names`: the space's property names),
    as it is: values its domains hold as they are, not converted (the text "4" measured by a
    space that lists batch sizes as text is another entity than the number 4, of another id:
    taken as inside, an optimizer was told the point twice, once with each result, and the
    operation never measured its own entity 4)."""
    values = outcome.entity_values
    return set(values) == names and space.entity_space.holds_as_is(values)
