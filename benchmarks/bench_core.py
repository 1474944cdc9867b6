"""Benchmark of the domain core: random sampling of a 10^12-point space and entity ids.

Run: .venv/bin/python benchmarks/bench_core.py  (or `make bench`). Prints a small table:
time to the first random sample, time and peak memory (tracemalloc) for 10^5 samples, ids per
second, and what listing the space would take instead.
"""

import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

from discospace.core import EntitySpace, PropertySpec, entity_id

T = TypeVar("T")

SAMPLES = 100_000
ID_ROUNDS = 100_000
FIRST_SAMPLE_TARGET_MS = 10.0
BYTES_PER_LISTED_ENTITY = 200
"""A conservative size of one listed entity (a dict of 12 values), to compare against."""


def huge_space() -> EntitySpace:
    """10^12 points: six categorical properties of 10 values, three discrete ranges of 100."""
    specs = [
        PropertySpec(name=f"choice_{i}", values=tuple(f"option-{j}" for j in range(10)))
        for i in range(6)
    ] + [PropertySpec(name=f"level_{i}", range=(0, 1000), interval=10) for i in range(3)]
    return EntitySpace.from_specs(specs)


def timed(action: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def peak_memory(action: Callable[[], T]) -> tuple[T, int]:
    """The result and the peak of traced allocations (a separate run: tracing slows code)."""
    tracemalloc.start()
    result = action()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, peak


def main() -> int:
    space = huge_space()
    assert space.size == 10**12

    first, first_s = timed(lambda: space.random(seed=2024).at(0))

    samples, many_s = timed(lambda: space.random(seed=2024).take(SAMPLES))
    assert len({s.id for s in samples}) == SAMPLES, "random sampling repeated an entity"
    del samples
    samples, peak = peak_memory(lambda: space.random(seed=2024).take(SAMPLES))
    _, tenth_peak = peak_memory(lambda: space.random(seed=2024).take(SAMPLES // 10))
    _, streamed_peak = peak_memory(lambda: sum(1 for _ in space.random(2024).take_iter(SAMPLES)))

    points = [s.as_dict() for s in samples[:ID_ROUNDS]]
    _, ids_s = timed(lambda: [entity_id(p) for p in points])

    listed = space.size * BYTES_PER_LISTED_ENTITY
    rows = [
        ("space size", f"{space.size:.0e} entities"),
        ("first random sample", f"{first_s * 1e3:.3f} ms (target < {FIRST_SAMPLE_TARGET_MS} ms)"),
        (f"{SAMPLES:,} random samples", f"{many_s:.2f} s ({SAMPLES / many_s:,.0f} per s)"),
        (
            f"peak memory, {SAMPLES:,} samples kept",
            f"{peak / 2**20:.1f} MiB ({peak / SAMPLES:.0f} B each)",
        ),
        (f"peak memory, {SAMPLES // 10:,} samples kept", f"{tenth_peak / 2**20:.1f} MiB"),
        (f"peak memory, {SAMPLES:,} streamed", f"{streamed_peak / 2**10:.1f} KiB (none kept)"),
        ("listing the space instead", f"~{listed / 2**40:,.0f} TiB"),
        ("entity ids (hash of canonical JSON)", f"{ID_ROUNDS / ids_s:,.0f} per s"),
        ("first sample", first.label),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0 if first_s * 1e3 < FIRST_SAMPLE_TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
