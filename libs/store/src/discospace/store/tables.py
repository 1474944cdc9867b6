"""Every table of the store, declared once: the migrations' DDL, inserts and reads come from here.

The store's own tables (migration 1):

- `events`: the raw log, one row per event id, ordered by operation (`correlation_id`, '' for
  none) then `event_id`; a bloom filter finds one event id across operations.
- `consumer_offsets`: the next offset each consumer reads, per topic and partition; the latest
  `updated_at` wins.
- `schema_migrations`: the versions applied, each with the checksum of its statements (created
  by `migrate` itself, outside the versioned history).

The projector's tables (migration 2), written by its fold and read by its views. Each is a
ReplacingMergeTree whose ORDER BY starts with what its reads select on and ends with `event_id`,
so a replayed event folds into the row it already wrote:

- `spaces`: one row per SpaceSubmitted, SpaceRegistered and SpaceRejected, keyed by space id
  (or `submission:<id>` when no id could be computed), so one space's rows sit together.
- `actuators`: one row per ActuatorRegistered, keyed by actuator, pool and worker.
- `operations`: one row per lifecycle event of an operation (requested, started, cancel
  requested, completed, failed), keyed by operation id.
- `measurements`: one row per measurement event (requested, started, completed, failed,
  reused), keyed by space, then operation: a space's view reads its own rows only.
- `results`: one row per MeasurementCompleted, keyed by sample store then entity: what the
  shared sample store knows, read by the views of every space on that store.

Migration 3 keeps the parts of `measurements` and `results` in ClickHouse's compact format up to
1 GiB instead of its default 10 MB (`COMPACT_PARTS` says why and what it measured).

A shipped declaration changes only by new columns at the end, each with the `added_in` version
of the migration that adds it (the CREATE of a shipped migration must not change); a setting
changes by a later migration's `ALTER TABLE ... MODIFY SETTING`.
"""

from __future__ import annotations

from discospace.store.schema import Column, Index, Table

_STRING = "String"
_KEY = "LowCardinality(String)"
_MILLIS = "DateTime64(3, 'UTC')"
_JSON = "ZSTD(3)"

EVENTS = Table(
    "events",
    columns=(
        Column("event_id", _STRING),
        Column("type", _KEY),
        Column("schema_version", "UInt16"),
        Column("occurred_at", _MILLIS),
        Column("correlation_id", _STRING),
        Column("causation_id", "Nullable(String)"),
        Column("key", "Nullable(String)"),
        Column("topic", _KEY),
        Column("partition", "Int32"),
        Column("offset", "Int64"),
        Column("payload", _STRING, codec=_JSON),
    ),
    indexes=(Index("events_event_id", "event_id", "bloom_filter(0.01)"),),
    order_by=("correlation_id", "event_id"),
)

CONSUMER_OFFSETS = Table(
    "consumer_offsets",
    columns=(
        Column("consumer", _STRING),
        Column("topic", _STRING),
        Column("partition", "Int32"),
        Column("offset", "Int64"),
        Column("updated_at", "DateTime64(6, 'UTC')"),
    ),
    engine="ReplacingMergeTree(updated_at)",
    order_by=("consumer", "topic", "partition"),
)

SCHEMA_MIGRATIONS = Table(
    "schema_migrations",
    columns=(
        Column("version", "UInt32"),
        Column("description", _STRING),
        Column("checksum", _STRING),
        Column("applied_at", _MILLIS),
    ),
    engine="ReplacingMergeTree(applied_at)",
    order_by=("version",),
)

SPACES = Table(
    "spaces",
    columns=(
        Column("space_key", _STRING),
        Column("event_id", _STRING),
        Column("status", _KEY),
        Column("space_id", _STRING),
        Column("submission_id", _STRING),
        Column("occurred_at", _MILLIS),
        Column("sample_store", _STRING),
        Column("size", "Nullable(String)"),
        Column("spec", _STRING, codec=_JSON),
        Column("experiments", _STRING, codec=_JSON),
        Column("reason", _STRING),
    ),
    order_by=("space_key", "event_id"),
)

ACTUATORS = Table(
    "actuators",
    columns=(
        Column("actuator", _STRING),
        Column("pool", _STRING),
        Column("worker_id", _STRING),
        Column("event_id", _STRING),
        Column("occurred_at", _MILLIS),
        Column("gpu_model", "Nullable(String)"),
        Column("experiments", _STRING, codec=_JSON),
    ),
    order_by=("actuator", "pool", "worker_id", "event_id"),
)

OPERATIONS = Table(
    "operations",
    columns=(
        Column("operation_id", _STRING),
        Column("event_id", _STRING),
        Column("type", _KEY),
        Column("occurred_at", _MILLIS),
        Column("space_id", _STRING),
        Column("payload", _STRING, codec=_JSON),
    ),
    order_by=("operation_id", "event_id"),
)

MEASUREMENTS = Table(
    "measurements",
    columns=(
        Column("space_id", _STRING),
        Column("operation_id", _STRING),
        Column("entity_id", _STRING),
        Column("experiment_id", _STRING),
        Column("event_id", _STRING),
        Column("kind", _KEY),
        Column("request_id", _STRING),
        Column("sample_store", _STRING),
        Column("occurred_at", _MILLIS),
        Column("attempt", "UInt16"),
        Column("is_valid", "Nullable(Bool)"),
        Column("reason", _STRING),
        Column("retryable", "Bool"),
        Column("values", _STRING),
        Column("entity_values", _STRING),
    ),
    order_by=("space_id", "operation_id", "entity_id", "experiment_id", "event_id"),
    settings=("index_granularity = 1024",),
)

RESULTS = Table(
    "results",
    columns=(
        Column("sample_store", _STRING),
        Column("entity_id", _STRING),
        Column("experiment_id", _STRING),
        Column("event_id", _STRING),
        Column("space_id", _STRING),
        Column("operation_id", _STRING),
        Column("occurred_at", _MILLIS),
        Column("is_valid", "Bool"),
        Column("reason", _STRING),
        Column("values", _STRING),
        Column("entity_values", _STRING),
    ),
    order_by=("sample_store", "entity_id", "experiment_id", "event_id"),
    settings=("index_granularity = 1024",),
)

COMPACT_PARTS = "min_bytes_for_wide_part = 1073741824"
"""Parts of up to 1 GiB (uncompressed) are written and merged in the compact format, all columns
in one file, rather than one file per column from 10 MB (ClickHouse's default). A view reads the
15 columns of a few rows of `measurements` and `results`: with wide parts each column is a file
to open per part, and a store of 10^6 measurements is made of wide parts. Measured with
`benchmarks/bench_views.py --sizes 1000000` (two runs each way, medians of the four scenarios):
the 80-entity views took 12-21% less (whole space view 9.8 against 11.2 ms, measured 5.5 against
6.8, elsewhere 9.2 against 11.6, operation progress 7.8 against 8.9), a view of 10^5 measured
entities and the progress of 10^4 pairs the same. Merges keep it: a part merged past 1 GiB is
wide again."""

PROJECTION_TABLES: tuple[Table, ...] = (SPACES, ACTUATORS, OPERATIONS, MEASUREMENTS, RESULTS)
"""The tables the projector's fold writes and its views read."""

TABLES: tuple[Table, ...] = (EVENTS, CONSUMER_OFFSETS, SCHEMA_MIGRATIONS, *PROJECTION_TABLES)
"""Every table of the store."""
