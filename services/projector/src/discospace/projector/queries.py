"""Reads of the projection tables: parameterised SQL, rows back as typed records.

Every read filters on a prefix of its table's ORDER BY, so ClickHouse touches only the granules
of the rows asked for: a space's measurements (`space_id`), one operation (`operation_id`), one
sample store's results for given entities (`sample_store`, `entity_id`). Each table is read as
a typed record whose fields name the columns selected, each checked against the table's one
declaration in `discospace.store.tables`; every value is a query parameter.

No read uses `FINAL`. Copies of a replayed event may sit in a table until ClickHouse merges
them (each table is a ReplacingMergeTree ending its ORDER BY with `event_id`), but a copy is
the same row: same event id, same content, because an event id names one event and a replay
re-reads the same bytes. Every fold over these rows is blind to an exact copy: spaces and
catalogs take the latest or highest-ranked row and sets of ids; an operation's lifecycle keeps
the latest payload of each type, its jobs one entry per job; progress counts per request id;
results are kept once per event id; the entity table folds per entity and experiment. `FINAL`
would instead merge every part's rows of the key range before filtering: its cost grows with
the parts the store holds, which is worst right after a bulk insert (the "elsewhere" read of an
80-entity space took 120 ms with it and 4 ms without it in a store of 10^6 results). So a
view's cost stays with the rows it selects, whatever the store holds. (The store's own
`FINAL` reads, of `consumer_offsets` and of the raw `events`, are explained in
`discospace.store.events`.)

Blocking: call from the store's worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from discospace.store.tables import ACTUATORS, MEASUREMENTS, OPERATIONS, RESULTS, SPACES

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

    from discospace.store.schema import Table


class SpaceRow(NamedTuple):
    space_key: str
    event_id: str
    status: str
    space_id: str
    submission_id: str
    occurred_at: datetime
    sample_store: str
    size: str | None
    spec: str
    experiments: str
    reason: str


class ActuatorRow(NamedTuple):
    actuator: str
    pool: str
    worker_id: str
    event_id: str
    occurred_at: datetime
    gpu_model: str | None
    experiments: str


class OperationRow(NamedTuple):
    operation_id: str
    event_id: str
    type: str
    occurred_at: datetime
    space_id: str
    payload: str


class MeasurementRow(NamedTuple):
    space_id: str
    operation_id: str
    entity_id: str
    experiment_id: str
    event_id: str
    kind: str
    request_id: str
    sample_store: str
    occurred_at: datetime
    attempt: int
    is_valid: bool | None
    reason: str
    retryable: bool
    values: str
    entity_values: str


class ResultRow(NamedTuple):
    sample_store: str
    entity_id: str
    experiment_id: str
    event_id: str
    space_id: str
    operation_id: str
    occurred_at: datetime
    is_valid: bool
    reason: str
    values: str
    entity_values: str


R = TypeVar("R", bound=NamedTuple)
ROW_TYPES: dict[Table, type[NamedTuple]] = {
    SPACES: SpaceRow,
    ACTUATORS: ActuatorRow,
    OPERATIONS: OperationRow,
    MEASUREMENTS: MeasurementRow,
    RESULTS: ResultRow,
}
"""The record each projection table is read as."""


def space_rows(client: Client, space_key: str | None = None) -> list[SpaceRow]:
    """Every space event, or those of one space (by id, or `submission:<id>`)."""
    if space_key is None:
        return _select(client, SPACES, SpaceRow)
    return _select(client, SPACES, SpaceRow, "space_key = {key:String}", {"key": space_key})


def actuator_rows(client: Client) -> list[ActuatorRow]:
    """Every actuator announcement."""
    return _select(client, ACTUATORS, ActuatorRow)


def operation_rows(client: Client, operation_id: str | None = None) -> list[OperationRow]:
    """The lifecycle events (and a pipeline's job events) of every operation, or of one."""
    if operation_id is None:
        return _select(client, OPERATIONS, OperationRow)
    where = "operation_id = {operation:String}"
    return _select(client, OPERATIONS, OperationRow, where, {"operation": operation_id})


def operations_rows(client: Client, operation_ids: Sequence[str]) -> list[OperationRow]:
    """The lifecycle and job events of several operations (a pipeline's children)."""
    if not operation_ids:
        return []
    where = "operation_id IN {operations:Array(String)}"
    return _select(client, OPERATIONS, OperationRow, where, {"operations": list(operation_ids)})


def space_measurements(
    client: Client, space_id: str, operation_id: str | None = None, limit: int | None = None
) -> list[MeasurementRow]:
    """The measurement events of a space's operations, or of one of them; with `limit`, at
    most that many of them, whichever the store finds first (to tell a small set from a
    large one: all of them when fewer)."""
    conditions = ["space_id = {space:String}"]
    parameters: dict[str, object] = {"space": space_id}
    if operation_id is not None:
        conditions.append("operation_id = {operation:String}")
        parameters["operation"] = operation_id
    where = " AND ".join(conditions)
    return _select(client, MEASUREMENTS, MeasurementRow, where, parameters, limit)


class PairSummary(NamedTuple):
    """Entity-experiment pairs (measurement request ids) of one operation that read the same,
    for its counts: whether a completion landed (`completed`; a valid one: `valid`), whether
    the store answered it (`reused`), and its latest row by (attempt, time, a failure last):
    that row's `kind`, `retryable` and `attempt`; `pairs` is how many pairs read so."""

    completed: bool
    valid: bool
    reused: bool
    kind: str
    retryable: bool
    attempt: int
    pairs: int


STAGE = {"requested": 0, "started": 1, "completed": 2, "failed": 2, "reused": 2}
"""The events of one attempt of a measurement in the order they happen: requested, started,
then the answer. Their times are stamped by several services' clocks (the sampler's, then a
worker's), so a worker's clock a second behind stamped its failure before the request: read by
time, the pair stayed in flight."""
_ANSWER = max(STAGE.values())
_STAGE_OF_KIND = (
    "multiIf("
    + "".join(f"kind = '{kind}', {stage}, " for kind, stage in STAGE.items() if stage < _ANSWER)
    + f"{_ANSWER})"
)
"""`STAGE` in SQL (declared kinds only, no user value)."""

_PER_PAIR = (
    "SELECT argMinIf(tuple(kind, is_valid), tuple(occurred_at, event_id),"  # noqa: S608 (declared kinds)
    " kind IN ('completed', 'reused')) AS first,"
    " first.1 = 'completed' AS completed, completed AND first.2 AS valid,"
    " first.1 = 'reused' AS reused,"
    " argMax(tuple(kind, retryable, attempt),"
    f" tuple(attempt, {_STAGE_OF_KIND}, occurred_at, kind = 'failed')) AS latest"
    " FROM measurements WHERE {where} GROUP BY request_id"
)
"""Per pair: its first result (what the explorer counts), and its latest row (by attempt, then
`STAGE`, then time)."""


def pair_summaries(
    client: Client, space_id: str, operation_id: str, until: datetime | None = None
) -> list[PairSummary]:
    """An operation's pairs summed up per kind of reading (`PairSummary`), from its rows that
    occurred at or before `until` when given: a handful of rows whatever the operation's size,
    where its measurement rows are three or more per pair.

    Copies of a replayed row change nothing here: each summary is a test for any row of a kind,
    or the latest row, and a copy is the same row."""
    where, parameters = _operation_rows(space_id, operation_id, until)
    per_pair = _PER_PAIR.format(where=where)
    sql = (
        "SELECT completed, valid, reused, latest.1, latest.2, latest.3, count()"  # noqa: S608
        f" FROM ({per_pair}) GROUP BY completed, valid, reused, latest"
    )
    rows = client.query(sql, parameters=parameters).result_rows
    return [
        PairSummary(bool(c), bool(v), bool(r), kind, bool(retryable), attempt, pairs)
        for c, v, r, kind, retryable, attempt, pairs in rows
    ]


def best_result(
    client: Client,
    space_id: str,
    operation_id: str,
    until: datetime | None,
    objective: tuple[str, str, str],
) -> MeasurementRow | None:
    """The operation's result (completed or reused row) with the best finite number at
    `objective` = (experiment id, target, "max" or "min"), the earliest of equal ones (by time,
    then event id); None when no valid result of that experiment holds a number there.

    The value is read with ClickHouse's JSON functions; the caller reads it again from the
    row's `values` with the rules of `discospace.core.results`, which give the same number
    (a JSON number, not a boolean or a string, parsed to the nearest double either way; a whole
    number beyond 64 bits is neither: ClickHouse types one from 2^63 as `UInt64`, beyond as
    `String`)."""
    experiment_id, target, direction = objective
    where, parameters = _operation_rows(space_id, operation_id, until)
    order = "DESC" if direction == "max" else "ASC"
    columns = ", ".join(MEASUREMENTS.column(name).name for name in MeasurementRow._fields)
    first = (  # each pair's first result: the explorer names its best from those
        f"SELECT {columns} FROM measurements WHERE {where}"  # noqa: S608 (declared names only)
        " AND kind IN ('completed', 'reused') ORDER BY occurred_at, event_id LIMIT 1 BY request_id"
    )
    sql = (
        f"SELECT {columns} FROM ({first}) WHERE is_valid = true"  # noqa: S608 (declared names)
        " AND experiment_id = {experiment:String}"
        " AND JSONType(values, {target:String}) IN ('Int64', 'Double')"
        " AND isFinite(JSONExtractFloat(values, {target:String}))"
        f" ORDER BY JSONExtractFloat(values, {{target:String}}) {order}, occurred_at, event_id"
        " LIMIT 1"
    )
    parameters |= {"experiment": experiment_id, "target": target}
    rows = client.query(sql, parameters=parameters).result_rows
    return MeasurementRow._make(rows[0]) if rows else None


def _operation_rows(
    space_id: str, operation_id: str, until: datetime | None
) -> tuple[str, dict[str, object]]:
    """The condition on an operation's measurement rows (up to `until`), and its parameters."""
    where = "space_id = {space:String} AND operation_id = {operation:String}"
    parameters: dict[str, object] = {"space": space_id, "operation": operation_id}
    if until is not None:
        where += " AND occurred_at <= toDateTime64({until:String}, 3, 'UTC')"
        parameters["until"] = until.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return where, parameters


def store_results(
    client: Client,
    sample_store: str,
    experiment_ids: Sequence[str],
    *,
    other_than_space: str,
    entity_ids: Sequence[str] | None = None,
) -> list[ResultRow]:
    """Valid results of a sample store for `experiment_ids`, measured through other spaces.

    With `entity_ids`, only those entities are read (the index finds them); without, every
    result of the store for those experiments is.
    """
    conditions = [
        "sample_store = {store:String}",
        "experiment_id IN {experiments:Array(String)}",
        "space_id != {space:String}",
        "is_valid",
    ]
    parameters: dict[str, object] = {
        "store": sample_store,
        "experiments": list(experiment_ids),
        "space": other_than_space,
    }
    if entity_ids is not None:
        conditions.append("entity_id IN {entities:Array(String)}")
        parameters["entities"] = list(entity_ids)
    where = " AND ".join(conditions)
    return _select(client, RESULTS, ResultRow, where, parameters)


def _select(
    client: Client,
    table: Table,
    row_type: type[R],
    where: str = "",
    parameters: dict[str, object] | None = None,
    limit: int | None = None,
) -> list[R]:
    """The rows of `table` matching `where`, oldest first, without `FINAL` (module doc).

    Sorted here, not by an `ORDER BY`: a read selects a space's or an operation's rows, which
    Python sorts in microseconds, where the sort stage cost chDB 0.3 ms a read (2.8 against
    2.5 ms for an 80-entity space's measurements)."""
    columns = ", ".join(table.column(name).name for name in row_type._fields)
    sql = f"SELECT {columns} FROM {table.name}"  # noqa: S608 (declared names only)
    parameters = dict(parameters or {})
    if where:
        sql += f" WHERE {where}"
    if limit is not None:
        sql += " LIMIT {limit:UInt64}"
        parameters["limit"] = limit
    result = client.query(sql, parameters=parameters)
    return sorted(map(row_type._make, result.result_rows), key=_OLDEST_FIRST)


_OLDEST_FIRST = attrgetter("occurred_at", "event_id")
"""Every row type has both: the order of the events, ties broken by id."""
