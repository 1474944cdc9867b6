"""The `replay` actuator: measurements served from published traces instead of hardware.

Configured by a replay config (see `config.py`): `DISCOSPACE_ACTUATOR_PARAMETERS=
'{"config": "examples/replay/fms-a100.yaml"}'`, or the config's fields inline. The trace is
loaded when the actuator is built, so a worker with a wrong config refuses to start with one
sentence. Replay runs no user code, so it needs no child process: each measurement is a lookup
(and, when configured, a simulated wait).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Protocol

from discospace.actuator.plugin import MeasurementTask, Outcome
from discospace.actuator.replay.config import ReplayConfig, ReplayParameters
from discospace.actuator.replay.table import Replayed, ReplayTable
from discospace.actuator.replay.train_to_target import TrainToTarget
from discospace.core import ExperimentSpec
from discospace.core.canonical import Value

ACTUATOR_NAME = "replay"


class Replayer(Protocol):
    """One replay mode: its catalog, and one measurement per (request, attempt)."""

    def catalog(self, actuator: str) -> tuple[ExperimentSpec, ...]: ...

    def replay(
        self, properties: Mapping[str, Value], request_id: str, attempt: int
    ) -> Replayed: ...


def replayer_of(parameters: ReplayParameters) -> Replayer:
    """The replay mode the parameters configure, with its trace loaded."""
    config, base = parameters.resolve()
    return _build(config, base)


def _build(config: ReplayConfig, base: Path) -> Replayer:
    if config.table is not None:
        return ReplayTable.load(config.table, base, config.seed)
    assert config.zeus is not None  # the config validates that one mode is given
    return TrainToTarget.load(config.zeus, base, config.seed)


class ReplayActuator:
    """Serves each measurement from a recorded trace (see the module docstring)."""

    name = ACTUATOR_NAME
    Parameters = ReplayParameters
    isolated: ClassVar[bool] = False
    """Runs no user code: measured in the worker's process, no child process needed."""

    def __init__(self, parameters: ReplayParameters) -> None:
        self.parameters = parameters
        self.replayer = replayer_of(parameters)

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        return self.replayer.catalog(self.name)

    async def measure(self, task: MeasurementTask) -> Outcome:
        replayed = self.replayer.replay(task.properties, task.request_id, task.attempt)
        if replayed.duration_s > 0:
            await asyncio.sleep(replayed.duration_s)
        return replayed.outcome
