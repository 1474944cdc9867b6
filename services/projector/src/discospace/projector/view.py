"""A space's entities as a table (pure): one row per entity, one column per property.

Every entity of the space is in exactly one of four views, in this order of precedence:

- measured: a valid result measured through one of this space's operations;
- elsewhere: no valid result measured here, but one in the same sample store measured through
  another space, for an experiment of this space (what this space's operations reused from the
  store included);
- unmeasured: sampled through this space, without a valid result (yet): the `reason` column
  says why (the actuator's invalid reason, a failure, or still in flight);
- unsampled: never sampled here nor measured elsewhere; listed lazily in grid order, up to a
  limit, and only for finite spaces.

Columns: `entity_id`, the constitutive properties in the space's order, the observed properties
(see `spaces.SpaceLayout`), `status` (which view) and `reason` (why an experiment of the space
has no valid result for the entity; empty otherwise). A measured row also shows the results its
operations reused for the space's other experiments; a row found elsewhere also says why this
space's own measurement of an experiment has no valid result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import Any, Literal, get_args

import pandas as pd

from discospace.core import Entity
from discospace.core.canonical import Value, beyond_64_bits, float_holds
from discospace.core.experiment import split_observed_property_id
from discospace.core.results import gives_up, kept_rank
from discospace.projector.errors import ViewError, quoted
from discospace.projector.queries import STAGE, MeasurementRow, ResultRow
from discospace.projector.spaces import ID_COLUMN, REASON_COLUMN, STATUS_COLUMN, SpaceLayout

View = Literal["measured", "elsewhere", "unmeasured", "unsampled"]
VIEWS: tuple[View, ...] = get_args(View)
DEFAULT_UNSAMPLED_LIMIT = 1000
"""Never-sampled entities listed when no limit is given (a space may hold billions)."""


def parse_include(text: str) -> tuple[View, ...]:
    """The views named by `text`: one of VIEWS, a comma-separated list of them, or `all`."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if names == ["all"]:
        return VIEWS
    unknown = [name for name in names if name not in VIEWS]
    if unknown or not names:
        raise ViewError(
            f"include {quoted(text)} is not one of {', '.join(VIEWS)} or all "
            "(or a comma-separated list of them)."
        )
    return tuple(view for view in VIEWS if view in names)


@dataclass
class _Pair:
    """One entity and one experiment of the space, folded from its events."""

    values: dict[str, Value] | None = None
    problem: str = ""


@dataclass
class _Entity:
    entity_id: str
    values: dict[str, Value]
    pairs: dict[str, _Pair] = field(default_factory=dict)

    @property
    def is_measured(self) -> bool:
        return any(pair.values is not None for pair in self.pairs.values())


def entity_table(
    layout: SpaceLayout,
    measurements: Sequence[MeasurementRow],
    elsewhere: Sequence[ResultRow],
    include: Sequence[View] = VIEWS,
    limit: int | None = None,
    grid: Iterable[Entity] | None = None,
    retries: Mapping[str, Retries] | None = None,
) -> pd.DataFrame:
    """The rows of the views in `include`, at most `limit` of them (see the module doc).

    `grid`: the space's entities in grid order when the caller keeps them (a small finite
    space), so the never-sampled ones are not computed again. `retries`: by operation id,
    whether a retryable failure of its will be retried (a reason says "may be retried" only
    then); without it, every retryable failure may be."""
    views = _partition(layout, measurements, elsewhere, retries or {})
    parts: dict[View, Iterable[dict[str, Any]]] = {
        view: _rows(layout, entities, view) for view, entities in views.items()
    }
    sampled = {key for entities in views.values() for key in entities}
    if "unsampled" in include:
        if len(include) == 1:  # said whatever the limit (limit 0 answered [] as if all sampled)
            _check_listable(layout)
        parts["unsampled"] = _unsampled_rows(layout, sampled, len(include) == 1, grid)
    shown = sum(len(views[view]) for view in include if view != "unsampled")
    cap = limit if limit is not None else shown + DEFAULT_UNSAMPLED_LIMIT
    rows = list(islice((row for view in include for row in parts[view]), cap))
    return whole_numbers_kept(pd.DataFrame(rows, columns=list(layout.columns)), rows)


def whole_numbers_kept(frame: pd.DataFrame, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """`frame` with each column of whole numbers that has a gap (an unmeasured row) as whole
    numbers: pandas makes such a column floats, so 60000 was exported as 60000.0, and a number
    beyond 2^53 as another number. It becomes pandas' nullable `Int64` (int64 with nulls in
    Parquet), or keeps its Python ints beyond 64 bits (`exports.arrow_safe` writes those as
    text in Parquet). A column that mixes fractions with a whole number no float holds (2^53 + 1
    beside 0.5) keeps its Python numbers too (text in Parquet, whose columns hold one type)."""
    for name in frame.columns:
        if frame[name].dtype != "float64":
            continue
        values = [row.get(name) for row in rows]
        present = [value for value in values if value is not None]
        whole = bool(present) and all(type(value) is int for value in present)
        if not whole or not frame[name].isna().any():
            if not all(float_holds(value) for value in present):
                frame[name] = pd.Series(values, dtype=object, index=frame.index)
            continue
        if not any(beyond_64_bits(value) for value in present):
            frame[name] = pd.array(values, dtype="Int64")
        else:
            frame[name] = pd.Series(values, dtype=object, index=frame.index)
    return frame


def _partition(
    layout: SpaceLayout,
    measurements: Sequence[MeasurementRow],
    elsewhere: Sequence[ResultRow],
    retries: Mapping[str, Retries],
) -> dict[View, dict[str, _Entity]]:
    """Entities known to the store, each in the first view that holds it."""
    here = _fold(layout, _measurement_pairs(measurements, retries))
    reused = _fold(layout, _reused_pairs(measurements))
    measured = {
        key: _filled(entity, reused.get(key)) for key, entity in here.items() if entity.is_measured
    }
    other = _fold(layout, _result_pairs(elsewhere, layout))
    for key, entity in reused.items():  # measured through another space: what was reused wins
        found = other.get(key)
        other[key] = entity if found is None else _filled(entity, found)
    other = {
        key: _filled(entity, here.get(key))
        for key, entity in other.items()
        if key not in measured and entity.is_measured
    }
    unmeasured = {k: e for k, e in here.items() if k not in measured and k not in other}
    return {"measured": measured, "elsewhere": other, "unmeasured": unmeasured}


def _filled(entity: _Entity, more: _Entity | None) -> _Entity:
    """`entity` with, for each experiment it has no valid values for, `more`'s pair (its
    valid values, or its problem: why it has none): a measured row shows a result its operation
    reused for another experiment, and a row found elsewhere says why this space's own
    measurement of an experiment is missing."""
    if more is None:
        return entity
    pairs = dict(entity.pairs)
    for experiment_id, pair in more.pairs.items():
        mine = pairs.get(experiment_id)
        if mine is None or (mine.values is None and (pair.values is not None or not mine.problem)):
            pairs[experiment_id] = pair
    return _Entity(entity.entity_id, entity.values, pairs)


def _rows(
    layout: SpaceLayout, entities: dict[str, _Entity], view: View
) -> Iterator[dict[str, Any]]:
    return (_row(layout, entity, view) for entity in entities.values())


def _measurement_pairs(
    rows: Sequence[MeasurementRow], retries: Mapping[str, Retries]
) -> Iterator[tuple[str, str, str, dict[str, Value] | None, str]]:
    """(entity id, entity values, experiment, valid values or None, problem) per event.

    Only a completion through this space gives values: a reused result was measured through
    another space of the store (see `_reused_pairs`); of a pair's valid completions, the one
    the store keeps (`kept_rank`: the earliest), wherever the causal order puts it (a
    redelivered attempt 1 completing after its retry came first, and showed its later value).
    """
    kept: dict[tuple[str, str], tuple[bool, datetime, str]] = {}  # (..., its event id)
    for row in rows:
        if row.is_valid is True and row.kind == "completed":
            pair = (row.entity_id, row.experiment_id)
            rank = kept_rank(True, row.occurred_at, row.event_id)
            kept[pair] = min(kept.get(pair, rank), rank)
    for row in in_causal_order(rows):
        chosen = kept.get((row.entity_id, row.experiment_id))
        valid = row.kind == "completed" and chosen is not None and chosen[2] == row.event_id
        values = json.loads(row.values) if valid else None
        problem = _problem(row, retries.get(row.operation_id))
        yield row.entity_id, row.entity_values, row.experiment_id, values, problem


def in_causal_order(rows: Sequence[MeasurementRow]) -> list[MeasurementRow]:
    """The rows of each measurement (an operation's entity and experiment) in the order its
    events happen: attempt by attempt, and within an attempt requested, started, then the
    answer; measurements by the time of their last event (their result), so the fold meets
    them in the order they ended.

    Event times are kept to the millisecond, and stamped by several services' clocks, so a
    measurement that starts and completes within one (a replayed table lookup) must not let its
    start be read after its result. Ordered by their operation's first row instead, a
    measurement of an entity by an operation that began earlier came first even when it ended
    later.
    """
    last: dict[tuple[str, str, str], tuple[tuple[datetime, int, str], int]] = {}
    for index, row in enumerate(rows):  # (its last event, its first row): rows kept together
        key = (row.operation_id, row.entity_id, row.experiment_id)
        event = (row.occurred_at, STAGE.get(row.kind, 0), row.event_id)
        latest, first = last.get(key, (event, index))
        last[key] = (max(latest, event), first)

    def order(row: MeasurementRow) -> tuple[tuple[datetime, int, str], int, int, int]:
        # measurements ending in one millisecond: by their answer's event id, as the
        # sampler's memo and the explorer break the tie (by the first row, the view kept
        # the other one)
        latest, first = last[(row.operation_id, row.entity_id, row.experiment_id)]
        return (latest, first, row.attempt, STAGE.get(row.kind, 0))

    return sorted(rows, key=order)


def _reused_pairs(
    rows: Sequence[MeasurementRow],
) -> Iterator[tuple[str, str, str, dict[str, Value] | None, str]]:
    """The valid results this space's operations reused, as measured elsewhere."""
    for row in rows:
        if row.kind == "reused" and row.is_valid:
            values = json.loads(row.values)
            yield row.entity_id, row.entity_values, row.experiment_id, values, ""


def _result_pairs(
    rows: Sequence[ResultRow], layout: SpaceLayout
) -> Iterator[tuple[str, str, str, dict[str, Value] | None, str]]:
    """The valid results of other spaces (`rows`, oldest first), one per entity and experiment:
    the earliest, the one the sampler's memo keeps and reuses (the latest was shown: a pair
    measured twice showed another value than every operation was handed)."""
    members: dict[str, bool] = {}
    seen: set[tuple[str, str]] = set()
    for row in rows:
        if row.entity_id not in members:
            point = json.loads(row.entity_values)
            members[row.entity_id] = layout.entity_space.holds_as_is(point)
        pair = (row.entity_id, row.experiment_id)
        if members[row.entity_id] and row.is_valid and pair not in seen:
            seen.add(pair)
            yield row.entity_id, row.entity_values, row.experiment_id, json.loads(row.values), ""


@dataclass(frozen=True)
class Retries:
    """What decides whether an operation retries a failure: its `max_retries`, and whether it
    has ended."""

    max_retries: int
    ended: bool

    def retries(self, attempt: int) -> bool:
        """Whether a retryable failure of attempt `attempt` is retried (the explorer's rule)."""
        return not self.ended and not gives_up(True, attempt, self.max_retries)


def _problem(row: MeasurementRow, retries: Retries | None = None) -> str:
    if row.kind in ("completed", "reused"):
        return "" if row.is_valid else f"invalid: {row.reason}"
    if row.kind == "failed":
        retried = row.retryable and (retries is None or retries.retries(row.attempt))
        again = ", may be retried" if retried else ""
        return f"failed (attempt {row.attempt}{again}): {row.reason}"
    if row.kind == "started":
        return f"being measured (attempt {row.attempt})"
    return f"requested, not measured yet (attempt {row.attempt})"


def _fold(
    layout: SpaceLayout,
    pairs: Iterable[tuple[str, str, str, dict[str, Value] | None, str]],
) -> dict[str, _Entity]:
    """Entities in order of first event; per experiment, the first valid values (in the order
    of `in_causal_order`: the earliest result, the one the sampler's memo keeps and reuses for
    the pair; the latest was shown, another value than later operations were handed) and the
    latest problem."""
    experiments = set(layout.experiment_ids)
    entities: dict[str, _Entity] = {}
    for entity_id, entity_values, experiment_id, values, problem in pairs:
        if experiment_id not in experiments:
            continue
        entity = entities.get(entity_id)
        if entity is None:
            entity = entities[entity_id] = _Entity(entity_id, json.loads(entity_values))
        pair = entity.pairs.setdefault(experiment_id, _Pair())
        if values is not None and pair.values is None:
            pair.values = values
        pair.problem = problem
    return entities


def _row(layout: SpaceLayout, entity: _Entity, view: View) -> dict[str, Any]:
    row: dict[str, Any] = {ID_COLUMN: entity.entity_id}
    row.update({name: entity.values.get(name) for name in layout.constitutive})
    for column in layout.observed:
        pair = entity.pairs.get(column.experiment_id)
        values = pair.values if pair is not None and pair.values is not None else {}
        row[column.name] = values.get(column.target)
    row[STATUS_COLUMN] = view
    row[REASON_COLUMN] = _reasons(layout, entity)
    return row


def _reasons(layout: SpaceLayout, entity: _Entity) -> str:
    missing = [
        (experiment_id, pair.problem)
        for experiment_id, pair in entity.pairs.items()
        if pair.values is None and pair.problem
    ]
    missing.extend(_not_run(layout, entity))
    if len(layout.experiment_ids) == 1:
        return "; ".join(problem for _, problem in missing)
    return "; ".join(f"{experiment_id}: {problem}" for experiment_id, problem in missing)


def _not_run(layout: SpaceLayout, entity: _Entity) -> list[tuple[str, str]]:
    """(experiment id, why) of each dependent experiment with no event for the entity whose
    dependency gave no valid result, or one without the value it reads: the explorer never
    requests it (`entity_progress.Skipped`, in the same words)."""
    skipped: dict[str, str] = {}
    for experiment_id, reads in layout.needs:
        pair = entity.pairs.get(experiment_id)
        if pair is not None and (pair.values is not None or pair.problem):
            continue
        why = next(filter(None, (_unreadable(entity, read, skipped) for read in reads)), None)
        if why is not None:
            skipped[experiment_id] = f"not run: {why}"
    return list(skipped.items())


def _unreadable(entity: _Entity, observed: str, skipped: Mapping[str, str]) -> str | None:
    """Why the entity's value `observed` (`<experiment id>.<target>`) will not be read; None
    while it may be (its experiment not answered yet, or answered with it)."""
    source, target = split_observed_property_id(observed)
    pair = entity.pairs.get(source)
    if pair is not None and pair.values is not None:
        return None if target in pair.values else f"'{source}' measured no '{target}'"
    settled = source in skipped or (pair is not None and _settled_invalid(pair.problem))
    return f"'{source}' gave no valid result" if settled else None


def _settled_invalid(problem: str) -> bool:
    """A problem that ends the pair without a valid result: an invalid one, or a failure that
    is not retried."""
    return problem.startswith("invalid:") or (
        problem.startswith("failed (") and ", may be retried)" not in problem
    )


def _check_listable(layout: SpaceLayout) -> None:
    """`ViewError` for a space whose never-sampled entities cannot be listed (infinite)."""
    space = layout.entity_space
    if not space.is_finite:
        names = ", ".join(p.name for p in space.infinite_properties())
        raise ViewError(
            f"space {layout.space_id!r} cannot list its never-sampled entities: "
            f"{names} {'has' if ',' not in names else 'have'} no finite domain."
        )


def _unsampled_rows(
    layout: SpaceLayout,
    known: AbstractSet[str],
    explicit: bool,
    grid: Iterable[Entity] | None = None,
) -> Iterator[dict[str, Any]]:
    space = layout.entity_space
    if not space.is_finite:
        if explicit:
            _check_listable(layout)
        return
    if len(known) >= space.size:
        # Every entity is sampled: the entities `known` are the space's own (the measurements
        # of its operations, and results elsewhere that `_result_pairs` found members), so
        # there is nothing to find by walking all of them (10^5 of them took 0.6-1.4 s).
        return
    for entity in space.sequential() if grid is None else grid:
        if entity.id in known:
            continue
        row: dict[str, Any] = {ID_COLUMN: entity.id}
        row.update({name: entity[name] for name in layout.constitutive})
        row.update({column.name: None for column in layout.observed})
        row.update({STATUS_COLUMN: "unsampled", REASON_COLUMN: ""})
        yield row
