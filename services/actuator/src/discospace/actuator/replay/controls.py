"""The optional properties of `train_to_target` that steer one run, read from a task.

Each has a default that means "not asked for" (0), since a catalog default is a plain value:
`cost_limit` 0 is no early stopping, `profile_power` 0 no profiling, `max_epochs` 0 the job's
own, `max_power` 0 the GPU's highest limit as the price of time (an optimizer sends the one it
prices with, so the run stops, and profiling picks its limit, by its cost). A value that cannot
be one of them is an `ExperimentError` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from discospace.core.canonical import Value
from discospace.core.errors import ExperimentError
from discospace.traces.zeus_rules import RunControls

COST_LIMIT, PROFILE_POWER, MAX_EPOCHS = "cost_limit", "profile_power", "max_epochs"
MAX_POWER = "max_power"
CONTROL_DEFAULTS: dict[str, int] = {COST_LIMIT: 0, PROFILE_POWER: 0, MAX_EPOCHS: 0, MAX_POWER: 0}
"""The run controls as optional properties, at their "not asked for" defaults."""


def run_controls(properties: Mapping[str, Value]) -> RunControls:
    """The run controls among `properties` (absent or 0: not asked for)."""
    cost_limit = _number(properties.get(COST_LIMIT, 0), COST_LIMIT)
    if cost_limit < 0:
        raise ExperimentError(f"{COST_LIMIT} must be 0 (no limit) or positive, not {cost_limit}")
    profile = properties.get(PROFILE_POWER, 0)
    if profile not in (0, 1):
        raise ExperimentError(f"{PROFILE_POWER} must be 0 or 1, not {profile!r}")
    max_epochs = _number(properties.get(MAX_EPOCHS, 0), MAX_EPOCHS)
    if max_epochs < 0 or not float(max_epochs).is_integer():
        raise ExperimentError(f"{MAX_EPOCHS} must be a whole number of epochs, not {max_epochs}")
    max_power = _number(properties.get(MAX_POWER, 0), MAX_POWER)
    if max_power < 0:
        raise ExperimentError(f"{MAX_POWER} must be 0 (the GPU's) or positive, not {max_power}")
    return RunControls(
        cost_limit=cost_limit or None,
        profile_power=bool(profile),
        max_epochs=int(max_epochs) or None,
        max_power=max_power or None,
    )


def eta_of(value: object) -> float:
    """The `eta` of the Zeus cost, a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ExperimentError(f"eta must be a number in [0, 1], not {value!r}")
    return float(value)


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ExperimentError(f"{name} must be a finite number, not {value!r}")
    return float(value)
