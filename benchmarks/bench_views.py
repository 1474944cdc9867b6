"""View figures on embedded chDB against its floor: a fixed 80-entity space while the store grows.

Run: .venv/bin/python benchmarks/bench_views.py [--sizes 1000,100000,1000000] [--rounds 3]
[--pairs 1000,10000,100000] [--entities 10000,100000]

Then one operation's progress as it grows to `--pairs` pairs (see `_large_operation`), and the
views of a space of `--entities` entities measured in full (see `_large_space`).

The space (2 models x 10 batch sizes x 4 GPU counts, one experiment) is measured in full
through the real fold. The store then grows to each size with measurements of other spaces, in
bulk inserts of 100,000 rows: `other-stores` puts them in other sample stores, `same-store` in
the space's own sample store (entities outside the space), the worst case for the "elsewhere"
view. Each view is read right after the bulk insert (its parts not merged yet), then again once
the tables are merged (`OPTIMIZE ... FINAL`). The baseline is `SELECT 1` through the same
client, measured in the same round, interleaved with the view: a round's figure is the median
of 5 reads of each, its ratio view / `SELECT 1`; each line prints min / median / max over the
rounds. On a shared 2-core machine the figures are noisy: read the ratios. A fresh temporary
data dir is used and removed. The garbage collector is set as `serve` sets it for the projector's
process (`runtime.collector`; `--python-gc` keeps Python's own thresholds).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from clickhouse_connect.driver.client import Client
from workload import T0, finetune_space, registered, walk_started

from discospace.core import (
    DiscoverySpace,
    Entity,
)
from discospace.core.canonical import canonical_json
from discospace.events import (
    MeasurementCompleted,
    MeasurementRequested,
    OperationStarted,
    measurement_request_id,
)
from discospace.projector.reading import StoreViews
from discospace.projector.settings import ProjectorSettings
from discospace.projector.writing import insert_rows
from discospace.runtime.collector import tune_collector
from discospace.store.client import StoreSettings, connect
from discospace.store.migrations import migrate
from discospace.store.tables import MEASUREMENTS, RESULTS

STORE = "bench-store"
SPEC = finetune_space(STORE, ("llama-7b", "granite-8b"), [2**i for i in range(10)])
SPACE_ID = DiscoverySpace.from_spec(SPEC).id
CHUNK = 100_000
ROUNDS = 3
READS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--pairs", default="1000,10000,100000")
    parser.add_argument("--entities", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--python-gc", action="store_true", help="keep Python's own collector thresholds"
    )
    arguments = parser.parse_args()
    if not arguments.python_gc:
        tune_collector(ProjectorSettings().gc_young_threshold)
    sizes = [int(size) for size in arguments.sizes.split(",")]
    global ROUNDS
    ROUNDS = arguments.rounds
    for layout in ("other-stores", "same-store"):
        with _fresh_store() as client:
            _grow_and_measure(client, layout, sizes)
    with _fresh_store() as client:
        _large_operation(client, [int(pairs) for pairs in arguments.pairs.split(",")])
    for entities in (int(size) for size in arguments.entities.split(",")):
        with _fresh_store() as client:
            _large_space(client, entities)


@contextmanager
def _fresh_store() -> Iterator[Client]:
    """A client on a new chDB store in a temporary data dir (removed after), holding the
    space measured in full (`_space_history`)."""
    with tempfile.TemporaryDirectory(prefix="bench-views-") as data_dir:
        client = connect(StoreSettings(url=None, data_dir=Path(data_dir), database="bench"))
        try:
            migrate(client)
            insert_rows(client, _space_history())
            yield client
        finally:
            client.close()


def _large_operation(client: Client, sizes: list[int]) -> None:
    """One operation's progress as it grows (a replayed table: requested, started and
    completed rows per pair), summed up by the store (`StoreViews`' default) against folding
    every row (`progress_rows_limit` beyond the operation, one timed read: the code before the
    store summed them up)."""
    objective = {"property": "train_tokens_per_second", "direction": "max"}
    started = walk_started(SPACE_ID, "op-large", objective=objective)
    insert_rows(client, [started])
    views, by_rows = StoreViews(client), StoreViews(client, progress_rows_limit=10**9)
    floor = lambda: client.query("SELECT 1").result_rows  # noqa: E731 (the baseline)
    stored = 0
    for size in sizes:
        rows = []
        for k in range(stored, size):
            values = {"model_name": "llama-7b", "batch_size": 4096 + k, "number_gpus": 1}
            entity_id, point = Entity.of(values).id, canonical_json(values)
            at = T0 + timedelta(milliseconds=k)
            for kind in ("requested", "started", "completed"):
                valid = True if kind == "completed" else None
                payload = f'{{"train_tokens_per_second":{k % 977}.0}}' if valid else "{}"
                subject = (SPACE_ID, "op-large", entity_id, "finetune", f"{kind}-{k}", kind)
                rows.append((*subject, f"req-{k}", STORE, at, 1, valid, "", False, payload, point))
        MEASUREMENTS.insert(client, rows)
        stored = size
        print(f"[large operation] {size:,} pairs ({3 * size:,} measurement rows):")
        began = time.perf_counter()
        expected = by_rows.operation("op-large")
        print(f"    folding every row (one read): {(time.perf_counter() - began) * 1000:.1f} ms")
        assert views.operation("op-large") == expected, "summed up and folded differ"
        _figure("operation progress, summed up", lambda: [views.operation("op-large")], 1, floor)


def _large_space(client: Client, entities: int) -> None:
    """A space of `entities` entities measured in full (a replayed table): every view of it
    reads and folds all of them; the never-sampled ones are none."""
    batch_sizes = range(1, entities // 8 + 1)  # x 2 models x 4 GPU counts
    spec = finetune_space(STORE, ("llama-7b", "granite-8b"), list(batch_sizes))
    space = DiscoverySpace.from_spec(spec)
    started = walk_started(space.id, "op-space")
    insert_rows(client, [registered(spec, space.id), started])
    measurements, results = [], []
    for k, entity in enumerate(space.entity_space.sequential()):
        at, point = T0 + timedelta(milliseconds=k), canonical_json(entity.as_dict())
        payload = f'{{"train_tokens_per_second":{k % 977}.5,"peak_gpu_memory_mib":1000}}'
        subject = (space.id, "op-space", entity.id, "finetune", f"ev-{k}", "completed")
        measurements.append((*subject, f"req-{k}", STORE, at, 1, True, "", False, payload, point))
        stored = (STORE, entity.id, "finetune", f"ev-{k}", space.id, "op-space", at, True, "")
        results.append((*stored, payload, point))
    MEASUREMENTS.insert(client, measurements)
    RESULTS.insert(client, results)
    views = StoreViews(client)
    floor = lambda: client.query("SELECT 1").result_rows  # noqa: E731 (the baseline)
    size = len(measurements)
    print(f"[large space] {size:,} entities, every one measured:")
    _figure(
        f"space show --include all ({size:,} rows)", lambda: views.entities(space.id), size, floor
    )
    _figure(
        f"space show --include measured ({size:,} rows)",
        lambda: views.entities(space.id, ("measured",)),
        size,
        floor,
    )


def _space_history() -> list[Any]:
    started = walk_started(SPACE_ID)
    events: list[Any] = [registered(SPEC, SPACE_ID), started]
    for index, entity in enumerate(DiscoverySpace.from_spec(SPEC).entity_space.sequential()):
        events += _measured(started, entity, index)
    return events


def _measured(started: OperationStarted, entity: Entity, index: int) -> list[Any]:
    subject = {
        "operation_id": "op-bench",
        "request_id": measurement_request_id("op-bench", entity.id, "finetune"),
        "space_id": SPACE_ID,
        "sample_store": STORE,
        "entity_id": entity.id,
        "entity_values": entity.as_dict(),
        "experiment_id": "finetune",
    }
    at = T0 + timedelta(seconds=index)
    requested = MeasurementRequested.caused_by(
        started, at, index, **subject, experiment=SPEC.measurement_space[0], pool="a100"
    )
    completed = MeasurementCompleted.caused_by(
        requested,
        at,
        **subject,
        worker_id="w0",
        values={"train_tokens_per_second": 100.0 + index, "peak_gpu_memory_mib": 1000},
        is_valid=True,
        uncertainty={},
        duration_seconds=1.0,
    )
    return [requested, completed]


def _grow_and_measure(client: Client, layout: str, sizes: list[int]) -> None:
    stored = 0
    for size in sizes:
        began = time.perf_counter()
        while stored < size:
            count = min(CHUNK, size - stored)
            _insert_background(client, layout, stored, count)
            stored += count
        grown = time.perf_counter() - began
        print(f"[{layout}] store at {size:>9,} other measurements (grown in {grown:.1f} s)")
        _measure_views(client, "right after the bulk insert")
        for table in (MEASUREMENTS, RESULTS):
            client.command(f"OPTIMIZE TABLE {table.name} FINAL")
        _measure_views(client, "merged")


def _insert_background(client: Client, layout: str, start: int, count: int) -> None:
    measurements, results = [], []
    for k in range(start, start + count):
        store = STORE if layout == "same-store" else f"store-{k % 10}"
        values = {"model_name": "other", "batch_size": 4096 + k, "number_gpus": 1}
        entity_id = Entity.of(values).id
        space, operation = f"space-bg{k % 100:03d}", f"op-bg{k % 1000:04d}"
        at = T0 + timedelta(milliseconds=k)
        event_id = f"bg-{k}"
        payload, point = '{"train_tokens_per_second":1.0}', canonical_json(values)
        subject = (space, operation, entity_id, "finetune", event_id, "completed", f"req-{k}")
        measurements.append((*subject, store, at, 1, True, "", False, payload, point))
        results.append(
            (store, entity_id, "finetune", event_id, space, operation, at, True, "", payload, point)
        )
    MEASUREMENTS.insert(client, measurements)
    RESULTS.insert(client, results)


def _measure_views(client: Client, state: str) -> None:
    parts = client.command(
        "SELECT count() FROM system.parts WHERE active AND database = currentDatabase()"
        " AND table IN ('measurements', 'results')"
    )
    print(f"  {state} ({parts} active parts in measurements and results):")
    views = StoreViews(client)
    floor = lambda: client.query("SELECT 1").result_rows  # noqa: E731 (the baseline)
    _figure("space show --include all (80 rows)", lambda: views.entities(SPACE_ID), 80, floor)
    _figure(
        "space show --include measured", lambda: views.entities(SPACE_ID, ("measured",)), 80, floor
    )
    _figure(
        "space show --include elsewhere", lambda: views.entities(SPACE_ID, ("elsewhere",)), 0, floor
    )
    _figure("operation progress (80 pairs)", lambda: [views.operation("op-bench")], 1, floor)


def _figure(name: str, read: Callable[[], Any], rows: int, floor: Callable[[], Any]) -> None:
    got = read()  # warm the caches the projector keeps (the space's layout)
    assert len(got) == rows, f"{name}: {len(got)} rows, expected {rows}"
    views, floors = [], []
    for _ in range(ROUNDS):
        views.append(_median_seconds(read))
        floors.append(_median_seconds(floor))
    ratios = [view / base for view, base in zip(views, floors, strict=True)]
    print(
        f"    {name}: {_spread(views, 1000, '{:.1f}')} ms, SELECT 1 "
        f"{_spread(floors, 1000, '{:.2f}')} ms, ratio {_spread(ratios, 1, '{:.1f}')}x"
    )


def _median_seconds(read: Callable[[], Any]) -> float:
    seconds = []
    for _ in range(READS):
        began = time.perf_counter()
        read()
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


def _spread(values: list[float], scale: float, form: str) -> str:
    """min / median / max of `values` times `scale`, each in `form`."""
    figures = (min(values), statistics.median(values), max(values))
    return " / ".join(form.format(value * scale) for value in figures)


if __name__ == "__main__":
    main()
