"""The views, read from the store: queries in, typed answers and tables out.

Blocking (clickhouse-connect and chDB are synchronous): the HTTP routes call these methods on
the store's worker thread. A registered space never changes under its id (the id is a hash of
its spec), so its state, its layout, and the entity ids of a small finite space, are read and
computed once and cached: an operation's progress then reads its lifecycle and its results
only (a space still submitted, or unknown, is read again each time).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING

import pandas as pd

from discospace.core import Entity
from discospace.projector import queries
from discospace.projector.catalogs import actuator_pools
from discospace.projector.errors import NotKnownError, ViewError, quoted
from discospace.projector.models import (
    ActuatorPool,
    OperationProgress,
    OperationResult,
    SpaceDetail,
    SpaceSummary,
)
from discospace.projector.pipelines import PIPELINE, child_operation_ids, with_jobs
from discospace.projector.progress import (
    before_end,
    ended_at,
    operation_progress,
    progress_reads,
    reported_progress,
    retries_of,
    summed_progress,
)
from discospace.projector.spaces import SpaceLayout, SpaceState, space_state, space_states
from discospace.projector.view import VIEWS, View, entity_table
from discospace.runtime.collector import collector_paused

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

ID_LOOKUP_LIMIT = 10_000
"""Finite spaces up to this size read other spaces' results by entity id (an index lookup);
larger ones read their sample store's results for their experiments and filter by membership."""
PROGRESS_ROWS_LIMIT = 3_000
"""An operation with at most this many measurement rows (about a thousand pairs) has its
progress computed from its rows (one read of 2-5 ms here); a larger one from its pairs summed up
by the store (two reads of about 4-5 ms each, where reading and folding every row costs about
6-10 us a row: 1.8-3.1 s for 10^5 pairs of three rows, 0.07-0.13 s summed up, the more with
an objective to read the best for; `benchmarks/bench_views.py --pairs`)."""
_CACHED_SPACES = 64
MAX_PIPELINE_DEPTH = 4
"""How deep pipelines inside pipelines are shown with their jobs (a trial's child pipeline is
1 deep); a deeper one is shown as an ordinary operation."""


class StoreViews:
    """Every view the projector serves, over one store client."""

    def __init__(
        self,
        client: Client,
        *,
        id_lookup_limit: int = ID_LOOKUP_LIMIT,
        progress_rows_limit: int = PROGRESS_ROWS_LIMIT,
    ) -> None:
        self.client = client
        self.id_lookup_limit = id_lookup_limit
        self.progress_rows_limit = progress_rows_limit
        self._layouts: OrderedDict[str, tuple[SpaceLayout, list[Entity] | None]] = OrderedDict()
        self._registered: OrderedDict[str, SpaceState] = OrderedDict()

    def spaces(self) -> list[SpaceSummary]:
        """Every space the store knows, registered, rejected or still submitted."""
        return [_summary(state) for state in space_states(queries.space_rows(self.client))]

    def space(self, space_id: str) -> SpaceDetail:
        """One space with its spec, experiments and view columns."""
        state = self._state(space_id)
        detail = SpaceDetail(
            **_summary(state).model_dump(),
            spec=state.spec,
            experiments=list(state.experiments),
        )
        if not state.is_registered:
            return detail
        layout = self._layout(space_id)[0]
        return detail.model_copy(
            update={
                "constitutive_properties": list(layout.constitutive),
                "observed_properties": {c.name: c.observed_id for c in layout.observed},
            }
        )

    def entities(
        self, space_id: str, include: tuple[View, ...] = VIEWS, limit: int | None = None
    ) -> pd.DataFrame:
        """The entities of a space in the views of `include` (see `view.entity_table`).

        Python's cyclic garbage collector is paused while the rows are read and folded: they
        are kept until the table is built, so every collection in between would walk them again
        (a space of 10^5 measured entities: 1.7 s with the service's collector, 1.4 s paused;
        `benchmarks/bench_views.py --entities`)."""
        layout, grid = self._layout(space_id)
        with collector_paused():
            measurements = queries.space_measurements(self.client, space_id)
            elsewhere = []
            if include != ("measured",):  # the other views exclude what is measured elsewhere
                elsewhere = queries.store_results(
                    self.client,
                    layout.sample_store,
                    layout.experiment_ids,
                    other_than_space=space_id,
                    entity_ids=None if grid is None else [entity.id for entity in grid],
                )
            failing = {m.operation_id for m in measurements if m.kind == "failed" and m.retryable}
            lifecycles = queries.operations_rows(self.client, sorted(failing))
            retries = retries_of(lifecycles)
            return entity_table(layout, measurements, elsewhere, include, limit, grid, retries)

    def operations(self, parent: str | None = None) -> list[OperationProgress]:
        """Every operation, oldest first: ended ones as reported, running ones computed, a
        pipeline with its jobs; with `parent`, only the operations that pipeline asked for."""
        by_operation = _grouped(queries.operation_rows(self.client))
        states = {s.space_id: s for s in space_states(queries.space_rows(self.client))}
        listed: dict[str, OperationProgress] = {}
        reported: set[str] = set()
        for operation_id, rows in by_operation.items():
            found = reported_progress(operation_id, rows, states.get(_space_id(rows)))
            if found is not None:
                reported.add(operation_id)
            listed[operation_id] = found or self._progress(operation_id, rows)
        shown: dict[str, OperationProgress] = {}

        def show(operation_id: str, depth: int = 0) -> OperationProgress | None:
            progress = shown.get(operation_id) or listed.get(operation_id)
            if progress is None or operation_id in shown:
                return progress
            if progress.operator == PIPELINE and depth < MAX_PIPELINE_DEPTH:
                rows = by_operation[operation_id]
                progress = with_jobs(
                    progress, rows, lambda child: show(child, depth + 1), operation_id in reported
                )
            shown[operation_id] = progress
            return progress

        every = [show(operation_id) or listed[operation_id] for operation_id in listed]
        return [p for p in every if parent is None or p.parent_operation_id == parent]

    def operation(self, operation_id: str) -> OperationProgress:
        """One operation's progress: status, counts, best so far, stop reason; a pipeline's
        jobs with their child operations' progress."""
        rows = queries.operation_rows(self.client, operation_id)
        if not rows:
            raise NotKnownError(f"operation {quoted(operation_id)} is not known to the projector.")
        return self._shown(operation_id, rows, 0)

    def operation_results(self, operation_id: str) -> list[OperationResult]:
        """The results an operation received (measured or reused) before it ended, oldest
        first (none for a pipeline: its children measure)."""
        rows = queries.operation_rows(self.client, operation_id)
        if not rows:
            raise NotKnownError(f"operation {quoted(operation_id)} is not known to the projector.")
        space_id = _space_id(rows)
        if space_id is None:
            return []
        measurements = queries.space_measurements(self.client, space_id, operation_id)
        return operation_results(before_end(measurements, ended_at(rows)))

    def actuators(self) -> list[ActuatorPool]:
        """Every actuator on every pool, with its latest catalog and its workers."""
        return actuator_pools(queries.actuator_rows(self.client))

    def _progress(self, operation_id: str, rows: list[queries.OperationRow]) -> OperationProgress:
        """Computed from its results: from its measurement rows when it has at most
        `progress_rows_limit` of them (one read), else summed up by the store
        (`progress.summed_progress`: two reads of a few rows each, whatever its size)."""
        space_id = _space_id(rows)
        if space_id is None:
            return operation_progress(operation_id, rows, [], None)
        space = self._space_of_operation(space_id)
        limit = self.progress_rows_limit
        measurements = queries.space_measurements(self.client, space_id, operation_id, limit + 1)
        if len(measurements) <= limit:
            return operation_progress(operation_id, rows, measurements, space)
        reads = progress_reads(rows, space)
        summaries = queries.pair_summaries(self.client, space_id, operation_id, reads.until)
        best = None
        if reads.objective is not None and summaries:
            best = queries.best_result(
                self.client, space_id, operation_id, reads.until, reads.objective
            )
        return summed_progress(operation_id, reads, summaries, best, space)

    def _shown(
        self, operation_id: str, rows: list[queries.OperationRow], depth: int
    ) -> OperationProgress:
        """The operation's progress; a pipeline's with its jobs and children (see
        `pipelines.py`), those that ended as they reported, the others computed."""
        space_id = _space_id(rows)
        reported = reported_progress(
            operation_id, rows, self._space_of_operation(space_id) if space_id else None
        )
        if reported is not None and reported.operator != PIPELINE:
            return reported  # as the explorer counted it, and as the list shows it
        progress = self._progress(operation_id, rows)
        if progress.operator != PIPELINE:
            return progress
        children = self._children(rows, depth) if depth < MAX_PIPELINE_DEPTH else {}
        return with_jobs(reported or progress, rows, children.get, reported is not None)

    def _children(
        self, rows: list[queries.OperationRow], depth: int
    ) -> dict[str, OperationProgress]:
        """The progress of the child operations a pipeline's jobs asked for."""
        ids = child_operation_ids(rows)
        children = {}
        for child_id, child_rows in _grouped(queries.operations_rows(self.client, ids)).items():
            space_id = _space_id(child_rows)
            space = self._space_of_operation(space_id) if space_id else None
            reported = reported_progress(child_id, child_rows, space)
            children[child_id] = reported or self._shown(child_id, child_rows, depth + 1)
        return children

    def _state(self, space_id: str) -> SpaceState:
        state = self._state_or_none(space_id)
        if state is None:
            raise NotKnownError(f"space {quoted(space_id)} is not known to the projector.")
        return state

    def _state_or_none(self, space_id: str) -> SpaceState | None:
        rows = queries.space_rows(self.client, space_id)
        return space_state(rows) if rows else None

    def _space_of_operation(self, space_id: str) -> SpaceState | None:
        """The space an operation runs on, for its progress: its spec, size and experiments,
        which never change once it is registered (its submissions may grow: `space` reads
        them afresh)."""
        cached = self._registered.get(space_id)
        if cached is not None:
            return cached
        state = self._state_or_none(space_id)
        if state is not None and state.is_registered:
            self._registered[space_id] = state
            if len(self._registered) > _CACHED_SPACES:
                self._registered.popitem(last=False)
        return state

    def _layout(self, space_id: str) -> tuple[SpaceLayout, list[Entity] | None]:
        cached = self._layouts.get(space_id)
        if cached is not None:
            self._layouts.move_to_end(space_id)
            return cached
        state = self._state(space_id)
        if not state.is_registered:
            raise ViewError(
                f"space {space_id!r} is {state.status}, not registered, so it has no views."
            )
        layout = SpaceLayout.of(state)
        entry = (layout, _grid(layout, self.id_lookup_limit))
        self._layouts[space_id] = entry
        if len(self._layouts) > _CACHED_SPACES:
            self._layouts.popitem(last=False)
        return entry


def operation_results(measurements: list[queries.MeasurementRow]) -> list[OperationResult]:
    """Completed and reused rows as results, once per event, in the order read."""
    seen: set[str] = set()
    results = []
    for row in measurements:
        if row.kind not in ("completed", "reused") or row.event_id in seen:
            continue
        seen.add(row.event_id)
        results.append(
            OperationResult(
                occurred_at=row.occurred_at,
                entity_id=row.entity_id,
                entity_values=json.loads(row.entity_values or "{}"),
                experiment_id=row.experiment_id,
                reused=row.kind == "reused",
                is_valid=bool(row.is_valid),
                values=json.loads(row.values or "{}"),
            )
        )
    return results


def _grouped(rows: list[queries.OperationRow]) -> dict[str, list[queries.OperationRow]]:
    """Rows by operation, operations in the order they first appear."""
    by_operation: dict[str, list[queries.OperationRow]] = {}
    for row in rows:
        by_operation.setdefault(row.operation_id, []).append(row)
    return by_operation


def _space_id(rows: list[queries.OperationRow]) -> str | None:
    """The operation's space, from the first of its rows that names one."""
    return next((row.space_id for row in rows if row.space_id), None)


def _grid(layout: SpaceLayout, limit: int) -> list[Entity] | None:
    """Every entity of a finite space of at most `limit`, in grid order (cached with its
    layout: the ids find results elsewhere, the entities list the never-sampled ones)."""
    space = layout.entity_space
    if not space.is_finite or space.size > limit:
        return None
    return list(space.sequential())


def _summary(state: SpaceState) -> SpaceSummary:
    return SpaceSummary(
        space_id=state.space_id,
        submission_ids=list(state.submission_ids),
        status=state.status,
        reason=state.reason,
        sample_store=state.sample_store,
        size=state.size,
        submitted_at=state.submitted_at,
        registered_at=state.decided_at,
    )
