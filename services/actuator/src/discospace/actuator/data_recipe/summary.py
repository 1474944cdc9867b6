"""Summaries of per-document statistics, as target values.

`describe` gives what Data-Juicer's analyzer reports for each statistic (pandas' `describe`):
the mean, the sample standard deviation (ddof 1) and the 10th, 50th and 90th percentiles
(linear interpolation), rounded to 6 significant digits so the values read well in tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from discospace.core.canonical import Value

PERCENTILES = {"p10": 10, "p50": 50, "p90": 90}


def rounded(value: float) -> float:
    return float(f"{value:.6g}")


def describe(prefix: str, stat: str, values: Sequence[float]) -> dict[str, Value]:
    """`<prefix>_<stat>_{mean,std,p10,p50,p90}` of `values` (at least one)."""
    array = np.asarray(values, dtype=float)
    found: dict[str, float] = {
        "mean": float(array.mean()),
        "std": float(array.std(ddof=1)) if array.size > 1 else 0.0,
    }
    found |= {name: float(np.percentile(array, q)) for name, q in PERCENTILES.items()}
    return {f"{prefix}_{stat}_{name}": rounded(value) for name, value in found.items()}


def described_names(prefix: str, stats: Sequence[str]) -> tuple[str, ...]:
    """The target names `describe` gives for each of `stats`, in order."""
    return tuple(
        f"{prefix}_{stat}_{name}" for stat in stats for name in ("mean", "std", *PERCENTILES)
    )
