-- migration 1
CREATE TABLE IF NOT EXISTS events (
    event_id String,
    type LowCardinality(String),
    schema_version UInt16,
    occurred_at DateTime64(3, 'UTC'),
    correlation_id String,
    causation_id Nullable(String),
    key Nullable(String),
    topic LowCardinality(String),
    partition Int32,
    offset Int64,
    payload String CODEC(ZSTD(3)),
    INDEX events_event_id event_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
ORDER BY (correlation_id, event_id);

-- migration 1
CREATE TABLE IF NOT EXISTS consumer_offsets (
    consumer String,
    topic String,
    partition Int32,
    offset Int64,
    updated_at DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (consumer, topic, partition);

-- migration 2
CREATE TABLE IF NOT EXISTS spaces (
    space_key String,
    event_id String,
    status LowCardinality(String),
    space_id String,
    submission_id String,
    occurred_at DateTime64(3, 'UTC'),
    sample_store String,
    size Nullable(String),
    spec String CODEC(ZSTD(3)),
    experiments String CODEC(ZSTD(3)),
    reason String
)
ENGINE = ReplacingMergeTree
ORDER BY (space_key, event_id);

-- migration 2
CREATE TABLE IF NOT EXISTS actuators (
    actuator String,
    pool String,
    worker_id String,
    event_id String,
    occurred_at DateTime64(3, 'UTC'),
    gpu_model Nullable(String),
    experiments String CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree
ORDER BY (actuator, pool, worker_id, event_id);

-- migration 2
CREATE TABLE IF NOT EXISTS operations (
    operation_id String,
    event_id String,
    type LowCardinality(String),
    occurred_at DateTime64(3, 'UTC'),
    space_id String,
    payload String CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree
ORDER BY (operation_id, event_id);

-- migration 2
CREATE TABLE IF NOT EXISTS measurements (
    space_id String,
    operation_id String,
    entity_id String,
    experiment_id String,
    event_id String,
    kind LowCardinality(String),
    request_id String,
    sample_store String,
    occurred_at DateTime64(3, 'UTC'),
    attempt UInt16,
    is_valid Nullable(Bool),
    reason String,
    retryable Bool,
    values String,
    entity_values String
)
ENGINE = ReplacingMergeTree
ORDER BY (space_id, operation_id, entity_id, experiment_id, event_id)
SETTINGS index_granularity = 1024;

-- migration 2
CREATE TABLE IF NOT EXISTS results (
    sample_store String,
    entity_id String,
    experiment_id String,
    event_id String,
    space_id String,
    operation_id String,
    occurred_at DateTime64(3, 'UTC'),
    is_valid Bool,
    reason String,
    values String,
    entity_values String
)
ENGINE = ReplacingMergeTree
ORDER BY (sample_store, entity_id, experiment_id, event_id)
SETTINGS index_granularity = 1024;

-- migration 3
ALTER TABLE measurements MODIFY SETTING min_bytes_for_wide_part = 1073741824;

-- migration 3
ALTER TABLE results MODIFY SETTING min_bytes_for_wide_part = 1073741824;
