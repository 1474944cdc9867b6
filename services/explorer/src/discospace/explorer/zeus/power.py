"""Just-in-time power-limit profiling and early stopping, as the explorer names them.

The rules live in `discospace.traces.zeus_rules`, shared with the replay actuator so that a run
costs the same in the in-process simulator and through the services: a batch size's first run
splits its first epoch over the power limits and keeps the one of least cost per epoch,
`(eta * average_power + (1 - eta) * max_power) * time_per_epoch` (ties: the higher limit), and
a run stops before the epoch that would pass its cost limit. This module re-exports them,
raising `DiscospaceError` where the shared rules raise `ZeusTraceError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from discospace.core import DiscospaceError
from discospace.traces import zeus_rules
from discospace.traces.zeus import ZeusTraceError
from discospace.traces.zeus_rules import LimitProfile, ProfilingEpoch

__all__ = [
    "LimitProfile",
    "ProfilingEpoch",
    "cheapest_limit",
    "epochs_within",
    "profiling_epoch",
]


@contextmanager
def _explorer_errors() -> Iterator[None]:
    try:
        yield
    except ZeusTraceError as error:
        raise DiscospaceError(str(error)) from None


def cheapest_limit(profiles: Sequence[LimitProfile], eta: float, max_power: float) -> int:
    """The power limit of least cost per epoch (ties: the higher limit)."""
    with _explorer_errors():
        return zeus_rules.cheapest_limit(profiles, eta, max_power)


def profiling_epoch(profiles: Sequence[LimitProfile]) -> ProfilingEpoch:
    """The profiling epoch's cost: the mean over limits of one epoch's time and energy."""
    with _explorer_errors():
        return zeus_rules.profiling_epoch(profiles)


def epochs_within(cost_limit: float | None, epoch_cost: float, max_epochs: int) -> int:
    """Whole epochs a run may train before its cost would pass `cost_limit`, at most
    `max_epochs` (None: no limit; 0: the run cannot afford one epoch)."""
    with _explorer_errors():
        return zeus_rules.epochs_within(cost_limit, epoch_cost, max_epochs)
