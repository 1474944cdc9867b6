"""An operation's views of a shared sample store as the store grows, against folding alone.

Before each decision the explorer shows the operator what the space's sample store held when
the operation started (`OperationView.store_results`, inside the space, and `store_elsewhere`,
on other entities for the same experiments: `explorer/domain/sample_store.py`).

Subject, per decision of a running operation: fold one new result into the store, then read
both views. Two kinds of result, each its own figure: one another operation measured meanwhile
(after this one started, so neither view shows it: the common case), and one that occurred
before the start and is read late (the elsewhere view shows it, so it changes).
Baseline, interleaved with it in every round: fold the same results alone into a store of the
same size (`SampleStores.record`). The ratio is what reading the views adds to a decision; it
should not grow with the store. Also shown: the first view of an operation, one pass over the
whole store (a fresh operation each round).

The store: `--sizes` results of other models for the same experiment (outside the space, all
from before the operation started), and a result for every entity of the 40-entity space. The
garbage collector is set as a service process sets it (`runtime.collector`). On a shared
2-core machine the figures are noisy: compare the ratios, measured in the same run.
Run: .venv/bin/python benchmarks/bench_explorer_store.py [--sizes 1000,10000,100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from workload import EXPERIMENT, finetune_space, line

from discospace.core import DiscoverySpace, parameterized_experiment_id
from discospace.events import (
    MeasurementCompleted,
    SpaceRegistered,
)
from discospace.explorer.domain.sample_store import SampleStores
from discospace.explorer.domain.spaces import KnownSpace, known_space
from discospace.runtime.collector import tune_collector
from discospace.testing.events import measured

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STORE = "shared"
MODEL = "llama-7b"
BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
DECISIONS = 500
"""Decisions timed per round (each folds one new result)."""
GC_YOUNG = 50_000
"""The services' default `gc_young_threshold`."""
EXPERIMENT_ID = parameterized_experiment_id("finetune", {})
FIGURES = {
    "first": "  first view of an operation: one pass over the store",
    "unseen": "  per decision, fold + both views, a result the views do not show",
    "unseen fold": "    fold alone, same results",
    "unseen ratio": "    ratio decision / fold",
    "seen": "  per decision, fold + both views, a result the elsewhere view shows",
    "seen fold": "    fold alone, same results",
    "seen ratio": "    ratio decision / fold",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    tune_collector(GC_YOUNG)
    space = _space()
    for size in (int(size) for size in arguments.sizes.split(",")):
        _measure(space, size, arguments.rounds)


def _measure(space: KnownSpace, size: int, rounds: int) -> None:
    started = T0 + timedelta(seconds=size + 100)
    stored = [
        _result({"model_name": f"other-{i}", "batch_size": 8, "number_gpus": 1}, i, "op-old")
        for i in range(size)
    ] + [
        _result(entity.as_dict(), size + index, "op-old")
        for index, entity in enumerate(space.entity_space.sequential())
    ]
    subject_store, baseline_store = _folded(stored), _folded(stored)
    _views(subject_store, space, "op-new", started)
    figures: dict[str, list[float]] = {name: [] for name in FIGURES}
    for round_index in range(rounds):
        first = f"op-first-{round_index}"
        figures["first"].append(_timed(partial(_views, subject_store, space, first, started)))
        subject_store.forget(first)
        for kind, seconds in (("unseen", size + 1000), ("seen", size + 50)):
            fresh = [
                _result(
                    {"model_name": f"{kind}-{round_index}-{j}", "batch_size": 8, "number_gpus": 1},
                    seconds,
                    f"op-{kind}-{round_index}",
                    index=j,
                )
                for j in range(DECISIONS)
            ]
            decided = _timed(partial(_decisions, subject_store, space, started, fresh))
            folded = _timed(partial(_folds, baseline_store, fresh))
            figures[kind].append(decided / DECISIONS)
            figures[f"{kind} fold"].append(folded / DECISIONS)
            figures[f"{kind} ratio"].append(decided / folded)
    print(f"store of {size:,} results ({len(stored):,} with the space's own):")
    for name, label in FIGURES.items():
        if name.endswith("ratio"):
            line(label, figures[name], "{:.2f}x")
        else:
            scale, unit = (1e3, "ms") if name == "first" else (1e6, "us")
            line(f"{label} ({unit})", [value * scale for value in figures[name]], "{:,.1f}")


def _space() -> KnownSpace:
    spec = finetune_space(STORE, [MODEL], BATCH_SIZES)
    space_id = DiscoverySpace.from_spec(spec).id
    event = SpaceRegistered(
        event_id=f"space-{space_id}",
        occurred_at=T0,
        submission_id="submission",
        space_id=space_id,
        spec=spec,
        experiments=(EXPERIMENT,),
    )
    known = known_space(event)
    assert isinstance(known, KnownSpace), known
    return known


def _result(
    values: dict[str, Any], seconds: int, operation: str, *, index: int | None = None
) -> MeasurementCompleted:
    return measured(
        values,
        T0 + timedelta(seconds=seconds),
        seconds if index is None else index,
        operation=operation,
        experiment_id=EXPERIMENT_ID,
        sample_store=STORE,
        results={"train_tokens_per_second": 1000.0 + seconds, "peak_gpu_memory_mib": 1.0},
    )


def _folded(results: list[MeasurementCompleted]) -> SampleStores:
    stores = SampleStores()
    for result in results:
        stores.record(result)
    return stores


def _views(stores: SampleStores, space: KnownSpace, operation: str, started: datetime) -> None:
    stores.results_for(space, operation, started)
    stores.results_elsewhere(space, operation, started)


def _decisions(
    stores: SampleStores, space: KnownSpace, started: datetime, fresh: list[MeasurementCompleted]
) -> None:
    for result in fresh:
        stores.record(result)
        _views(stores, space, "op-new", started)


def _folds(stores: SampleStores, fresh: list[MeasurementCompleted]) -> None:
    for result in fresh:
        stores.record(result)


def _timed(work: Callable[[], None]) -> float:
    gc.collect()
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
