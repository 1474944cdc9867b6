"""Benchmark of the domain core: random sampling of a 10^12-point space and entity ids.

Run: .venv/bin/python benchmarks/bench_core.py [--rounds 3]  (or `make bench`). Prints a small
table: time to the first random sample, time and peak memory (tracemalloc) for 10^5 samples, ids
per second, and what listing the space would take instead. Then, round after round, each
subject beside the bare standard library doing the same work, alternately, with min / median /
max and the ratio measured in the same round:

- 10^5 random samples without replacement (entities) against `random.Random.sample` of
  10^5 indices of `range(10**12)`, each decoded to its values (mixed radix, `divmod`);
- entity ids (canonical JSON, SHA-256) against `hashlib.sha256` of `json.dumps(..., sort_keys)`
  of the same points.
"""

import argparse
import hashlib
import json
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from workload import line

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


def bare_samples(space: EntitySpace, seed: int, count: int) -> list[dict[str, object]]:
    """`count` distinct points by the standard library alone: indices, decoded by `divmod`."""
    domains = [(prop.name, prop.domain.values) for prop in space.properties]
    points = []
    for index in random.Random(seed).sample(range(int(space.size)), count):
        point: dict[str, object] = {}
        for name, values in reversed(domains):
            index, digit = divmod(index, len(values))
            point[name] = values[digit]
        points.append(point)
    return points


def bare_id(point: dict[str, object]) -> str:
    text = json.dumps(point, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _each(function: Callable[[dict[str, object]], str], points: list[dict[str, object]]) -> None:
    for point in points:
        function(point)


def compare(space: EntitySpace, rounds: int) -> None:
    """Each subject and its baseline, alternately, `rounds` times; the ratio per round."""
    figures: dict[str, list[float]] = {}
    for round_ in range(rounds):
        seed = 2024 + round_
        sampling = space.random(seed=seed)
        _, seconds = timed(partial(sampling.take, SAMPLES))
        figures.setdefault("sampling", []).append(SAMPLES / seconds)
        _, seconds = timed(partial(bare_samples, space, seed, SAMPLES))
        figures.setdefault("bare sampling", []).append(SAMPLES / seconds)
        points = bare_samples(space, seed, ID_ROUNDS)
        for name, function in (("ids", entity_id), ("bare ids", bare_id)):
            _, seconds = timed(partial(_each, function, points))
            figures.setdefault(name, []).append(ID_ROUNDS / seconds)

    def ratio(subject: str, baseline: str) -> list[float]:
        return [a / b for a, b in zip(figures[subject], figures[baseline], strict=True)]

    print(f"\n{rounds} rounds, each subject beside its baseline:")
    line(f"random samples of the space ({SAMPLES:,}, per s)", figures["sampling"], "{:,.0f}")
    line("random.Random.sample of indices + divmod (per s)", figures["bare sampling"], "{:,.0f}")
    line("ratio sampling / bare", ratio("sampling", "bare sampling"), "{:.2f}x")
    line("entity ids (per s)", figures["ids"], "{:,.0f}")
    line("sha256 of json.dumps(sort_keys) (per s)", figures["bare ids"], "{:,.0f}")
    line("ratio ids / bare", ratio("ids", "bare ids"), "{:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
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
    compare(space, rounds)
    return 0 if first_s * 1e3 < FIRST_SAMPLE_TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
