"""Test plugins that misbehave on request, imported as a top-level module (the tests folder is
on `sys.path`, see conftest), so a child process or a worker process can import it by name.

- `ChildPlugin` (isolated, measured in child processes) answers, crashes, hangs, raises,
  allocates or returns garbage as its entity's `behaviour` says;
- `FaultyPlugin` (in process, an async `measure`) raises, exits, runs out of memory, hangs,
  ignores its cancellation, blocks the event loop or returns garbage as its entity's `fault`
  says;
- `garbage(kind, good)`: the outcomes that break the plugin contract, shared by both.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy
from pydantic import BaseModel, ConfigDict

from discospace.actuator.plugin import MeasurementTask, Outcome, TransientFailure
from discospace.core import ExperimentSpec
from discospace.core.measurement import InvalidMeasurement, ValidMeasurement

BEHAVIOURS = ("answer", "invalid", "transient", "exit", "segfault", "hang", "raise", "allocate")
"""What `ChildPlugin` does; also `sysexit`, `killed`, `oom_score`, `spawn-hang`, `spawn-answer`,
`fork-exit` and `garbage:<kind>`."""

GARBAGE = (
    "not-an-outcome",
    "nothing",
    "missing-target",
    "undeclared-target",
    "nan",
    "infinite",
    "list-value",
    "object-value",
    "huge-integer",
    "lone-surrogate",
    "oversize",
    "invalid-without-reason",
    "transient-without-reason",
    "negative-uncertainty",
    "huge-uncertainty",
    "array-uncertainty",
)
"""The kinds of `garbage`."""


def garbage(kind: str, good: dict[str, Any]) -> object:
    """An outcome of `kind` that breaks the contract, made from `good` (the declared targets'
    values); `model_construct` skips validation as a careless plugin (or an unpickled object)
    may."""
    first = next(iter(good))
    broken: dict[str, object] = {
        "nan": float("nan"),
        "infinite": float("-inf"),
        "list-value": [1, 2],
        "object-value": object(),
        "huge-integer": 10**30,
        "lone-surrogate": "\ud800",
        "oversize": "x" * 2_000_000,
    }
    if kind in broken:
        return ValidMeasurement.model_construct(values={**good, first: broken[kind]})
    made: dict[str, Any] = {
        "not-an-outcome": lambda: dict(good),
        "nothing": lambda: None,
        "missing-target": lambda: ValidMeasurement(values={first: good[first]}),
        "undeclared-target": lambda: ValidMeasurement(values={**good, "extra": 1}),
        "invalid-without-reason": lambda: InvalidMeasurement.model_construct(reason=""),
        "transient-without-reason": lambda: TransientFailure(None),
        "negative-uncertainty": lambda: ValidMeasurement.model_construct(
            values=good, uncertainty={first: -1.0}
        ),
        "huge-uncertainty": lambda: ValidMeasurement.model_construct(
            values=good, uncertainty={first: 10**400}
        ),
        "array-uncertainty": lambda: ValidMeasurement.model_construct(
            values=good, uncertainty=numpy.array([0.1, 0.2])
        ),
    }
    return made[kind]()


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
        behaviour = str(task.entity["behaviour"])
        if behaviour.startswith("garbage:"):
            good = {"pid": os.getpid(), "megabytes": 0}
            return garbage(behaviour.removeprefix("garbage:"), good)
        if behaviour == "oom_score":
            score = int(Path("/proc/self/oom_score_adj").read_text())
            return ValidMeasurement(values={"pid": os.getpid(), "megabytes": score})
        if behaviour == "huge-result":
            big = "x" * (80 * 1024 * 1024)
            return ValidMeasurement.model_construct(values={"pid": os.getpid(), "megabytes": big})
        if behaviour == "unpicklable":
            return ValidMeasurement.model_construct(values={"pid": lambda: 0, "megabytes": 0})
        if behaviour.startswith("spawn-"):  # a process of its own, as a data loader starts
            helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            self._write_pid(task, "helper", helper.pid)
            if behaviour == "spawn-hang":
                time.sleep(3600)
            return ValidMeasurement(values={"pid": os.getpid(), "megabytes": 0})
        if behaviour == "fork-exit":  # dies, while a process it forked holds the answer pipe
            if os.fork() == 0:
                self._write_pid(task, "helper", os.getpid())
                time.sleep(3600)
            time.sleep(0.2)
            os._exit(3)
        if behaviour == "sysexit":
            sys.exit(4)
        if behaviour == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        if behaviour == "exit":
            os._exit(3)
        if behaviour == "segfault":
            ctypes.string_at(0)
        if behaviour == "hang":
            time.sleep(3600)
        if behaviour == "raise":
            raise ValueError(f"cannot behave on attempt {task.attempt}")
        if behaviour == "raise-base":  # an SDK's own abort: not an Exception
            raise GeneratorExit("the SDK aborted")
        if behaviour == "raise-undecodable":
            raise ValueError("corrupt shard caf\udce9")
        if behaviour == "invalid":
            return InvalidMeasurement(reason="batch does not fit")
        if behaviour == "transient":
            return TransientFailure("device busy")
        megabytes = self.parameters.allocate_mb if behaviour == "allocate" else 0
        block = bytearray(megabytes * 1024 * 1024)
        time.sleep(self.parameters.seconds)
        return ValidMeasurement(values={"pid": os.getpid(), "megabytes": len(block) // 2**20})

    def _write_pid(self, task: MeasurementTask, name: str, pid: int) -> None:
        if self.parameters.pid_dir is not None:
            Path(self.parameters.pid_dir, f"{task.request_id}.{name}").write_text(str(pid))


class FaultyParameters(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    block_s: float = 60.0
    """How long `block` and `busy` hold the event loop (if nothing interrupts them)."""
    stubborn_s: float = 3.0
    """How long `stubborn` ignores its cancellation."""


class FaultyPlugin:
    """An in-process plugin (async `measure`, run on the worker's event loop) that misbehaves
    as its entity's `fault` says: `none` answers."""

    name = "faulty"
    Parameters = FaultyParameters

    def __init__(self, parameters: FaultyParameters | None = None) -> None:
        self.parameters = parameters or FaultyParameters()

    def catalog(self) -> tuple[ExperimentSpec, ...]:
        return (
            ExperimentSpec(
                actuator=self.name,
                experiment="probe",
                target_properties=("value", "note"),
                required_properties=("fault",),
            ),
        )

    async def measure(self, task: MeasurementTask) -> Outcome:
        fault = str(task.entity["fault"])
        good: dict[str, Any] = {"value": 1.5, "note": f"fine after {fault}"}
        if fault.startswith("garbage:"):
            return garbage(fault.removeprefix("garbage:"), good)
        if fault == "raise":
            raise RuntimeError("driver crashed")
        if fault == "raise-undecodable":  # a file name os.listdir gave for the bytes caf\xe9
            raise RuntimeError("corrupt shard caf\udce9")
        if fault == "transient-undecodable":
            return TransientFailure("mount caf\udce9 missing")
        if fault == "invalid-undecodable":
            return InvalidMeasurement.model_construct(reason="no shard caf\udce9")
        if fault == "raise-validation":  # the plugin's own outcome, refused as it builds it
            ValidMeasurement(values={**good, "value": [1, 2]})
        if fault == "raise-huge":
            raise RuntimeError("x" * 1_000_000)
        if fault == "long-reason":
            return InvalidMeasurement(reason="does not fit " * 10_000)
        if fault == "long-note":
            return ValidMeasurement(values={**good, "note": "n" * 5000})
        if fault == "numpy":
            import numpy

            return ValidMeasurement(values={**good, "value": numpy.float64(1.5)})
        if fault == "exit":
            sys.exit(3)
        if fault == "memory":
            bytearray(1 << 50)  # a pebibyte: refused at once, MemoryError
        if fault == "hang":
            await asyncio.Event().wait()
        if fault == "stubborn":
            await _ignore_cancellation(self.parameters.stubborn_s)
        if fault == "block":
            time.sleep(self.parameters.block_s)  # holds the event loop
        if fault == "busy":
            _spin(self.parameters.block_s)
        return ValidMeasurement(values=good)


async def _ignore_cancellation(seconds: float) -> None:
    """Wait `seconds`, swallowing every cancellation meanwhile."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        try:
            await asyncio.sleep(left)
        except asyncio.CancelledError:
            continue


def _spin(seconds: float) -> None:
    """Hold the interpreter (no system call to interrupt) for `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
