"""Isolated test plugins: measured in child processes, they answer, crash, hang, raise or
allocate as their entity's `behaviour` says. Imported as a top-level module (the tests folder
is on `sys.path`, see conftest), so a child process can import it by name too."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from discospace.actuator.plugin import MeasurementTask, Outcome, TransientFailure
from discospace.core import ExperimentSpec
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

BEHAVIOURS = ("answer", "invalid", "transient", "exit", "segfault", "hang", "raise", "allocate")


class ChildParameters(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    allocate_mb: int = 256
    """What `allocate` asks for."""
    pid_dir: str | None = None
    """Where each child writes its pid (a file per request), so a test can watch it."""
    seconds: float = 0.0
    """How long `answer` takes."""


class ChildPlugin:
    """Behaves as the entity's `behaviour` property says, in its own process."""

    name = "child-test"
    isolated: ClassVar[bool] = True
    Parameters = ChildParameters

    def __init__(self, parameters: ChildParameters) -> None:
        self.parameters = parameters

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        return (
            ExperimentSpec(
                actuator=self.name,
                experiment="behave",
                target_properties=("pid", "megabytes"),
                required_properties=("behaviour",),
            ),
        )

    def measure_blocking(self, task: MeasurementTask) -> Outcome:
        if self.parameters.pid_dir is not None:
            Path(self.parameters.pid_dir, task.request_id).write_text(str(os.getpid()))
        behaviour = task.entity["behaviour"]
        if behaviour == "exit":
            os._exit(3)
        if behaviour == "segfault":
            ctypes.string_at(0)
        if behaviour == "hang":
            time.sleep(3600)
        if behaviour == "raise":
            raise ValueError(f"cannot behave on attempt {task.attempt}")
        if behaviour == "invalid":
            return InvalidMeasurement(reason="batch does not fit")
        if behaviour == "transient":
            return TransientFailure("device busy")
        megabytes = self.parameters.allocate_mb if behaviour == "allocate" else 0
        block = bytearray(megabytes * 1024 * 1024)
        time.sleep(self.parameters.seconds)
        return ValidMeasurement(values={"pid": os.getpid(), "megabytes": len(block) // 2**20})
