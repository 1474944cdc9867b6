"""Seeded choices that are the same on every machine: (seed, parts) -> a number."""

from __future__ import annotations

import numpy as np

from discospace.core.permutation import derive_seed, unit_interval


def choose(count: int, seed: int, *parts: object) -> int:
    """An index in [0, count), a pure function of (seed, parts)."""
    return min(int(unit_interval(seed, *parts) * count), count - 1)


def generator(seed: int, *parts: object) -> np.random.Generator:
    """A numpy generator seeded from (seed, parts)."""
    return np.random.default_rng(int.from_bytes(derive_seed(seed, *parts)[:8], "big"))
