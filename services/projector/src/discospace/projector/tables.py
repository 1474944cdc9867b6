"""The projection tables as the projector writes them: names, columns, and one row type.

The DDL lives in the store's migrations (version 2); this module names the columns in the order
the fold fills them. Every table ends its ORDER BY with `event_id`, so a replayed event folds
into the row it already wrote (ReplacingMergeTree) and every read uses `FINAL`.

- `spaces`: one row per SpaceSubmitted, SpaceRegistered and SpaceRejected, keyed by space id
  (or `submission:<id>` when no id could be computed), so one space's rows sit together.
- `actuators`: one row per ActuatorRegistered, keyed by actuator, pool and worker.
- `operations`: one row per lifecycle event of an operation (requested, started, cancel
  requested, completed, failed), keyed by operation id.
- `measurements`: one row per measurement event (requested, started, completed, failed,
  reused), keyed by space, then operation: a space's view reads its own rows only.
- `results`: one row per MeasurementCompleted, keyed by sample store then entity: what the
  shared sample store knows, read by the views of every space on that store.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Table(StrEnum):
    """The projection tables (identifiers come from this fixed list only)."""

    SPACES = "spaces"
    ACTUATORS = "actuators"
    OPERATIONS = "operations"
    MEASUREMENTS = "measurements"
    RESULTS = "results"


COLUMNS: dict[Table, tuple[str, ...]] = {
    Table.SPACES: (
        "space_key",
        "event_id",
        "status",
        "space_id",
        "submission_id",
        "occurred_at",
        "sample_store",
        "size",
        "spec",
        "experiments",
        "reason",
    ),
    Table.ACTUATORS: (
        "actuator",
        "pool",
        "worker_id",
        "event_id",
        "occurred_at",
        "gpu_model",
        "experiments",
    ),
    Table.OPERATIONS: ("operation_id", "event_id", "type", "occurred_at", "space_id", "payload"),
    Table.MEASUREMENTS: (
        "space_id",
        "operation_id",
        "entity_id",
        "experiment_id",
        "event_id",
        "kind",
        "request_id",
        "sample_store",
        "occurred_at",
        "attempt",
        "is_valid",
        "reason",
        "retryable",
        "values",
        "entity_values",
    ),
    Table.RESULTS: (
        "sample_store",
        "entity_id",
        "experiment_id",
        "event_id",
        "space_id",
        "operation_id",
        "occurred_at",
        "is_valid",
        "reason",
        "values",
        "entity_values",
    ),
}


@dataclass(frozen=True, slots=True)
class TableRow:
    """One row for one projection table, its values in `COLUMNS[table]` order."""

    table: Table
    values: tuple[object, ...]

    def __post_init__(self) -> None:
        expected = len(COLUMNS[self.table])
        if len(self.values) != expected:
            raise ValueError(
                f"A row of {self.table} has {expected} columns, not {len(self.values)}."
            )
