"""Store figures on embedded chDB: connect + migrate, event insert rate, query by operation.

Run: .venv/bin/python benchmarks/bench_store.py [--events 100000] [--batch 1000]
Each figure is printed as one line; a fresh temporary data dir is used and removed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from clickhouse_connect.driver.client import Client

from discospace.store.client import StoreSettings, connect
from discospace.store.events import EventRecord, insert_events, read_events, write_batch
from discospace.store.migrations import migrate

T0 = datetime(2026, 11, 21, tzinfo=UTC)
EVENTS_PER_OPERATION = 100
NAMESPACE = uuid.UUID("5b0b2c1e-8f0a-4c7e-9a57-6f1d2a4c0d15")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-store-") as data_dir:
        client = _connect_and_migrate(Path(data_dir))
        _insert_rate(client, args.events, args.batch)
        _query_by_operation(client, args.events)
        client.close()


def _connect_and_migrate(data_dir: Path) -> Client:
    started = time.perf_counter()
    client = connect(StoreSettings(url=None, data_dir=data_dir / "store"))
    connected = time.perf_counter()
    migrate(client)
    done = time.perf_counter()
    print(
        f"chDB connect + migrate on a fresh dir: {done - started:.3f} s "
        f"(connect {connected - started:.3f} s, migrate {done - connected:.3f} s)"
    )
    return client


def _insert_rate(client: Client, total: int, batch: int) -> None:
    operations = _operations(total)
    records = [_record(i, operations) for i in range(total)]
    seconds = []
    for start in range(0, total, batch):
        began = time.perf_counter()
        insert_events(client, records[start : start + batch])
        seconds.append(time.perf_counter() - began)
    rate = total / sum(seconds)
    print(
        f"insert_events, batches of {batch}: {rate:,.0f} events/s over {total:,} events "
        f"(median batch {statistics.median(seconds) * 1000:.1f} ms)"
    )
    write_batch(client, "bench", records[:batch])
    began = time.perf_counter()
    write_batch(client, "bench", records[:batch])
    print(f"write_batch of a batch already read: {(time.perf_counter() - began) * 1000:.1f} ms")


def _query_by_operation(client: Client, total: int) -> None:
    operations = _operations(total)
    for state in ("as inserted", "merged"):
        if state == "merged":
            client.command("OPTIMIZE TABLE events FINAL")
        parts = client.command(
            "SELECT count() FROM system.parts"
            " WHERE active AND database = currentDatabase() AND table = 'events'"
        )
        timings = _time_reads(client, operations, total // operations)
        print(
            f"read_events by correlation id over {total:,} events, {state} ({parts} parts): "
            f"median {statistics.median(timings) * 1000:.1f} ms, max {max(timings) * 1000:.1f} ms"
        )


def _time_reads(client: Client, operations: int, expected: int) -> list[float]:
    timings = []
    for i in range(0, operations, max(1, operations // 50)):
        began = time.perf_counter()
        found = read_events(client, correlation_id=f"op-{i:06d}")
        timings.append(time.perf_counter() - began)
        if len(found) != expected:
            raise SystemExit(f"expected {expected} events, read {len(found)}")
    return timings


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
