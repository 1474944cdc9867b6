"""What the GPU did during a run, from NVML: compute utilization, memory, power and energy.

A `GpuMonitor` samples a device's counters in a thread while the timed steps run (a context
manager around them). Energy comes from NVML's total energy counter (millijoules since the
driver loaded; Volta and later), read at both ends; where the device has no such counter, the
sampled power is integrated over time instead. `pynvml` (the `nvidia-ml-py` package, in the
actuator's `gpu` extra) is imported only when a real device is opened.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from types import ModuleType
from typing import Any, Protocol

DEFAULT_INTERVAL_S = 0.1


class GpuCounters(Protocol):
    """The counters of one GPU, read now."""

    def utilization_percent(self) -> float:
        """Share of the last sample period a kernel ran (NVML's `utilization.gpu`)."""
        ...

    def memory_used_fraction(self) -> float: ...

    def power_watts(self) -> float: ...

    def energy_joules(self) -> float | None:
        """The total energy counter, or None where the device has none."""
        ...


@dataclass(frozen=True)
class GpuSample:
    at_s: float
    utilization_percent: float
    memory_used_fraction: float
    power_watts: float


@dataclass(frozen=True)
class GpuUsage:
    """A summary of the samples taken during a run."""

    compute_utilization_avg: float
    """Percent."""
    memory_utilization_peak: float
    """Percent of the device's memory."""
    energy_joules: float
    power_watts_avg: float
    samples: int


@dataclass
class GpuMonitor:
    """Samples `counters` every `interval_s` in a thread while the `with` block runs."""

    counters: GpuCounters
    interval_s: float = DEFAULT_INTERVAL_S
    clock: Callable[[], float] = time.monotonic
    samples: list[GpuSample] = field(default_factory=list)
    _energy_at_start: float | None = None
    _energy_at_end: float | None = None
    _started_s: float = 0.0
    _stopped_s: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    failure: Exception | None = None
    """What stopped the sampling thread before the run ended (NVML lost the GPU, a reading
    not supported): the samples then cover part of the run only."""

    def __enter__(self) -> GpuMonitor:
        self._energy_at_start = self.counters.energy_joules()
        self._started_s = self.clock()
        self.sample()
        self._thread = threading.Thread(target=self._run, name="gpu-monitor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._stopped_s = self.clock()
        try:
            self.sample()
            self._energy_at_end = self.counters.energy_joules()
        except Exception as error:  # as in the thread: the run's readings are incomplete
            self.failure = self.failure or error

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except Exception as error:  # kept for the caller: a thread's error is only printed
                self.failure = error
                return

    def sample(self) -> None:
        """Read every counter once."""
        counters = self.counters
        self.samples.append(
            GpuSample(
                at_s=self.clock(),
                utilization_percent=counters.utilization_percent(),
                memory_used_fraction=counters.memory_used_fraction(),
                power_watts=counters.power_watts(),
            )
        )

    def usage(self, extra_memory_fraction: float = 0.0) -> GpuUsage:
        """The summary; `extra_memory_fraction` is a peak seen elsewhere (torch's allocator)."""
        samples = self.samples
        energy = self._counted_energy()
        if energy is None:
            energy = integrated_energy(samples)
        elapsed = self._stopped_s - self._started_s
        return GpuUsage(
            compute_utilization_avg=sum(s.utilization_percent for s in samples) / len(samples),
            memory_utilization_peak=100.0
            * max(extra_memory_fraction, *(s.memory_used_fraction for s in samples)),
            energy_joules=energy,
            power_watts_avg=energy / elapsed if elapsed > 0 else samples[-1].power_watts,
            samples=len(samples),
        )

    def _counted_energy(self) -> float | None:
        if self._energy_at_start is None or self._energy_at_end is None:
            return None
        return self._energy_at_end - self._energy_at_start


def integrated_energy(samples: list[GpuSample]) -> float:
    """Joules from power samples by the trapezoid rule (when there is no energy counter)."""
    return sum(
        0.5 * (before.power_watts + after.power_watts) * (after.at_s - before.at_s)
        for before, after in pairwise(samples)
    )


class NvmlCounters:
    """`GpuCounters` of one device through `pynvml` (or a module with the same functions)."""

    def __init__(self, nvml: ModuleType | Any, handle: object) -> None:
        self.nvml = nvml
        self.handle = handle

    def utilization_percent(self) -> float:
        return float(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)

    def memory_used_fraction(self) -> float:
        memory = self.nvml.nvmlDeviceGetMemoryInfo(self.handle)
        return float(memory.used) / float(memory.total)

    def power_watts(self) -> float:
        return self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0

    def energy_joules(self) -> float | None:
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1000.0
        except self.nvml.NVMLError:
            return None


class NvmlUnavailableError(RuntimeError):
    """NVML cannot read the GPU a measurement runs on (no driver library, no such device):
    the worker's environment, not the configuration; `str()` says why in one sentence."""


def open_counters(uuid: str | None, index: int = 0, nvml: ModuleType | Any = None) -> NvmlCounters:
    """The counters of the GPU with this UUID (as CUDA names it), else of NVML device `index`.

    CUDA and NVML may number devices differently (`CUDA_VISIBLE_DEVICES`), the UUID does not.
    A UUID NVML does not know falls back to device `index` only when NVML sees one GPU: with
    several, that would read another GPU's energy and power as this run's. `NvmlUnavailableError`
    when NVML cannot start (its library missing: pynvml installed, the driver's library not
    mounted) or the GPU cannot be told.
    """
    if nvml is None:
        import pynvml

        nvml = pynvml
    try:
        nvml.nvmlInit()
        if uuid:
            name = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
            try:
                return NvmlCounters(nvml, nvml.nvmlDeviceGetHandleByUUID(name))
            except nvml.NVMLError:
                if nvml.nvmlDeviceGetCount() != 1:
                    raise NvmlUnavailableError(
                        f"NVML knows no GPU {name} (CUDA's device) among its "
                        f"{nvml.nvmlDeviceGetCount()}: its counters would be another GPU's"
                    ) from None
        return NvmlCounters(nvml, nvml.nvmlDeviceGetHandleByIndex(index))
    except nvml.NVMLError as error:
        raise NvmlUnavailableError(f"NVML cannot read the GPU ({error})") from None
