"""Store figures on embedded chDB, each beside the bare client doing the same work, in one run.

Three subjects, each interleaved with its baseline, round after round, in databases of their own
on one chDB data dir (one engine per process); every line prints min / median / max over the
rounds, and the ratio subject / baseline measured in the same round:

- `migrate` on a fresh database (the history table, checksums, column checks) against the same
  CREATE statements sent by the bare client;
- `insert_events` (one row per event id, rows built from `EventRecord`s) against
  clickhouse-connect's `insert` of the identical rows, prepared beforehand, batch for batch
  alternately (`--batch` events a batch);
- `read_events` of one operation's events (by correlation id, as the explorer and the CLI read
  them), as inserted and once merged (`OPTIMIZE ... FINAL`), against `SELECT 1` through the same
  client, read for read alternately; a round's figure is the median of its reads.

Then `write_batch` of a batch already read (the projector's replay after a crash: nothing
written) against the same `SELECT 1` floor. On a shared 2-core machine the figures are noisy:
read the ratios. A fresh temporary data dir is used and removed.

Run: .venv/bin/python benchmarks/bench_store.py [--events 100000] [--batch 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from clickhouse_connect.driver.client import Client
from workload import line

from discospace.store.client import StoreSettings, connect
from discospace.store.events import EventRecord, insert_events, read_events, write_batch
from discospace.store.migrations import MIGRATIONS, migrate
from discospace.store.tables import EVENTS

T0 = datetime(2026, 11, 21, tzinfo=UTC)
EVENTS_PER_OPERATION = 100
READS = 50
NAMESPACE = uuid.UUID("5b0b2c1e-8f0a-4c7e-9a57-6f1d2a4c0d15")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    records = [_record(i, _operations(args.events)) for i in range(args.events)]
    rows = [record.row() for record in records]
    print(f"{args.events:,} events, batches of {args.batch:,}, {args.rounds} rounds")
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as data_dir:
        for round_ in range(args.rounds):
            store = Path(data_dir) / "store"
            subject, baseline = _databases(store, f"s{round_}"), _databases(store, f"b{round_}")
            _keep(figures, "migrate", _timed(migrate, subject))
            _keep(figures, "create", _timed(_create, baseline))
            insert, raw = _insert_rates(subject, baseline, records, rows, args.batch)
            _keep(figures, "insert_events", insert)
            _keep(figures, "raw insert", raw)
            for state in ("as inserted", "merged"):
                if state == "merged":
                    subject.command("OPTIMIZE TABLE events FINAL")
                read, floor = _reads(subject, args.events)
                _keep(figures, f"read {state}", read)
                _keep(figures, f"floor {state}", floor)
            replay, floor = _replay(subject, records[: args.batch])
            _keep(figures, "replay", replay)
            _keep(figures, "floor replay", floor)
            subject.close()
            baseline.close()
            print(
                f"  round {round_ + 1}: insert_events {insert:,.0f} events/s, raw insert "
                f"{raw:,.0f} events/s; read by operation {figures['read merged'][-1] * 1e3:.2f} "
                f"ms, SELECT 1 {figures['floor merged'][-1] * 1e3:.2f} ms"
            )
    _report(figures)


def _report(figures: dict[str, list[float]]) -> None:
    def ratio(subject: str, baseline: str) -> list[float]:
        return [s / b for s, b in zip(figures[subject], figures[baseline], strict=True)]

    line("migrate, fresh database (ms)", _ms(figures["migrate"]), "{:.1f}")
    line("the same CREATE statements, bare client (ms)", _ms(figures["create"]), "{:.1f}")
    line("ratio migrate / bare CREATE", ratio("migrate", "create"), "{:.2f}x")
    line("insert_events (events/s)", figures["insert_events"], "{:,.0f}")
    line("raw clickhouse-connect insert, same rows (events/s)", figures["raw insert"], "{:,.0f}")
    line("ratio insert_events / raw insert", ratio("insert_events", "raw insert"), "{:.2f}x")
    for state in ("as inserted", "merged"):
        line(f"read_events by operation, {state} (ms)", _ms(figures[f"read {state}"]), "{:.2f}")
        line(f"SELECT 1, same client, {state} round (ms)", _ms(figures[f"floor {state}"]), "{:.2f}")
        line(
            f"ratio read_events / SELECT 1, {state}",
            ratio(f"read {state}", f"floor {state}"),
            "{:.1f}x",
        )
    line("write_batch of a batch already read (ms)", _ms(figures["replay"]), "{:.2f}")
    line("ratio write_batch replay / SELECT 1", ratio("replay", "floor replay"), "{:.1f}x")


def _databases(store: Path, database: str) -> Client:
    return connect(StoreSettings(url=None, data_dir=store, database=database))


def _create(client: Client) -> None:
    """The statements of every migration, sent as they are: the work `migrate` wraps."""
    for migration in MIGRATIONS:
        for statement in migration.statements:
            client.command(statement)


def _insert_rates(
    subject: Client, baseline: Client, records: list[EventRecord], rows: list, batch: int
) -> tuple[float, float]:
    """Events per second of `insert_events` and of a raw insert, batch for batch alternately."""
    spent = [0.0, 0.0]
    for start in range(0, len(records), batch):
        spent[0] += _timed(insert_events, subject, records[start : start + batch])
        spent[1] += _timed(_raw_insert, baseline, rows[start : start + batch])
    return len(records) / spent[0], len(records) / spent[1]


def _raw_insert(client: Client, rows: list) -> None:
    client.insert(
        EVENTS.name, rows, column_names=EVENTS.column_names, column_type_names=EVENTS.column_types
    )


def _reads(client: Client, total: int) -> tuple[float, float]:
    """Median seconds of `read_events` of one operation and of `SELECT 1`, alternately."""
    operations = _operations(total)
    expected = total // operations
    reads, floors = [], []
    for i in range(0, operations, max(1, operations // READS)):
        began = time.perf_counter()
        found = read_events(client, correlation_id=f"op-{i:06d}")
        reads.append(time.perf_counter() - began)
        if len(found) != expected:
            raise SystemExit(f"expected {expected} events, read {len(found)}")
        floors.append(_timed(client.query, "SELECT 1"))
    return statistics.median(reads), statistics.median(floors)


def _replay(client: Client, records: list[EventRecord]) -> tuple[float, float]:
    """Median seconds of `write_batch` of a batch read before, and of `SELECT 1`."""
    write_batch(client, "bench", records)
    replays, floors = [], []
    for _ in range(5):
        replays.append(_timed(write_batch, client, "bench", records))
        floors.append(_timed(client.query, "SELECT 1"))
    return statistics.median(replays), statistics.median(floors)


def _timed(function: Callable[..., object], *arguments: object) -> float:
    """Seconds `function(*arguments)` took."""
    began = time.perf_counter()
    function(*arguments)
    return time.perf_counter() - began


def _keep(figures: dict[str, list[float]], name: str, value: float) -> None:
    figures.setdefault(name, []).append(value)


def _ms(seconds: list[float]) -> list[float]:
    return [s * 1000 for s in seconds]


def _operations(total: int) -> int:
    return max(1, total // EVENTS_PER_OPERATION)


def _record(i: int, operations: int) -> EventRecord:
    operation = f"op-{i % operations:06d}"
    return EventRecord(
        event_id=str(uuid.uuid5(NAMESPACE, str(i))),
        type=("SamplesRequested", "MeasurementRequested", "MeasurementCompleted")[i % 3],
        schema_version=1,
        occurred_at=T0 + timedelta(milliseconds=i),
        correlation_id=operation,
        causation_id=str(uuid.uuid5(NAMESPACE, str(i - 1))),
        key=operation,
        topic="measurements",
        partition=i % 8,
        offset=i // 8,
        payload='{"values": {"tokens_per_second": 1234.5, "peak_gpu_memory_gb": 61.2}}',
    )


if __name__ == "__main__":
    main()
