"""Sampling a GPU's counters during a run, with fake counters and a fake `pynvml`."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from discospace.actuator.gpu_train.nvml import (
    GpuMonitor,
    NvmlCounters,
    NvmlUnavailableError,
    open_counters,
)


class FakeCounters:
    """Counters that move as a test says; `energy` None: the device has no energy counter."""

    def __init__(self, energy: list[float] | None = None, power: float = 200.0) -> None:
        self.utilization = 50.0
        self.memory = 0.25
        self.power = power
        self.energy = energy
        self.reads = 0

    def utilization_percent(self) -> float:
        self.reads += 1
        return self.utilization

    def memory_used_fraction(self) -> float:
        return self.memory

    def power_watts(self) -> float:
        return self.power

    def energy_joules(self) -> float | None:
        return self.energy.pop(0) if self.energy is not None else None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_summary_averages_utilization_and_keeps_the_memory_peak():
    counters, clock = FakeCounters(energy=[1000.0, 1300.0]), Clock()
    with GpuMonitor(counters, interval_s=60, clock=clock) as monitor:
        for utilization, memory in ((90.0, 0.5), (100.0, 0.75)):
            clock.now += 1
            counters.utilization, counters.memory = utilization, memory
            monitor.sample()
        clock.now += 1
        counters.memory = 0.1

    usage = monitor.usage()

    assert usage.samples == 4  # at the start, two in between, at the end
    assert usage.compute_utilization_avg == pytest.approx((50 + 90 + 100 + 100) / 4)
    assert usage.memory_utilization_peak == pytest.approx(75.0)
    assert usage.energy_joules == pytest.approx(300.0)
    assert usage.power_watts_avg == pytest.approx(100.0)  # 300 J in 3 s


def test_a_peak_seen_by_the_allocator_counts_when_the_samples_missed_it():
    with GpuMonitor(FakeCounters(energy=[0.0, 1.0]), interval_s=60, clock=Clock()) as monitor:
        pass

    assert monitor.usage(extra_memory_fraction=0.9).memory_utilization_peak == pytest.approx(90.0)


def test_without_an_energy_counter_the_sampled_power_is_integrated():
    counters, clock = FakeCounters(energy=None, power=200.0), Clock()
    with GpuMonitor(counters, interval_s=60, clock=clock) as monitor:
        clock.now += 2
        counters.power = 300.0
        monitor.sample()
        clock.now += 2

    usage = monitor.usage()

    assert usage.energy_joules == pytest.approx(2 * 250 + 2 * 300)
    assert usage.power_watts_avg == pytest.approx(275.0)


def test_the_monitor_samples_in_a_thread_while_the_block_runs_and_stops_after():
    counters = FakeCounters(energy=[0.0, 5.0])
    with GpuMonitor(counters, interval_s=0.01) as monitor:
        time.sleep(0.2)
    reads_at_exit = counters.reads
    time.sleep(0.05)

    assert len(monitor.samples) >= 4  # the first, the last, and some taken by the thread
    assert counters.reads == reads_at_exit


class NVMLError(Exception):
    pass


def fake_pynvml(
    energy_supported: bool = True, uuids: tuple[str, ...] = (), devices: int = 1, loads: bool = True
) -> SimpleNamespace:
    """The functions of `pynvml` that the counters call, with fixed readings."""

    def init():
        if not loads:
            raise NVMLError("NVML Shared Library Not Found")

    def energy(handle):
        if not energy_supported:
            raise NVMLError("Not Supported")
        return 123_456  # millijoules

    def by_uuid(name):
        if name not in uuids:
            raise NVMLError("Not Found")
        return ("uuid", name)

    return SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=init,
        nvmlDeviceGetCount=lambda: devices,
        nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlDeviceGetHandleByIndex=lambda index: ("index", index),
        nvmlDeviceGetUtilizationRates=lambda handle: SimpleNamespace(gpu=87, memory=40),
        nvmlDeviceGetMemoryInfo=lambda handle: SimpleNamespace(used=20 * 2**30, total=80 * 2**30),
        nvmlDeviceGetPowerUsage=lambda handle: 312_500,  # milliwatts
        nvmlDeviceGetTotalEnergyConsumption=energy,
    )


def test_nvml_readings_become_percent_fractions_watts_and_joules():
    counters = NvmlCounters(fake_pynvml(), handle=("index", 0))

    assert counters.utilization_percent() == 87.0
    assert counters.memory_used_fraction() == pytest.approx(0.25)
    assert counters.power_watts() == pytest.approx(312.5)
    assert counters.energy_joules() == pytest.approx(123.456)


def test_a_device_without_an_energy_counter_reads_none():
    assert NvmlCounters(fake_pynvml(energy_supported=False), handle=0).energy_joules() is None


def test_the_gpu_is_found_by_its_cuda_uuid_else_by_index():
    nvml = fake_pynvml(uuids=("GPU-abc", "MIG-def"))

    assert open_counters("abc", nvml=nvml).handle == ("uuid", "GPU-abc")
    assert open_counters("GPU-abc", nvml=nvml).handle == ("uuid", "GPU-abc")
    assert open_counters("MIG-def", nvml=nvml).handle == ("uuid", "MIG-def")
    assert open_counters("other", nvml=nvml).handle == ("index", 0)  # the only GPU NVML sees
    assert open_counters(None, index=2, nvml=nvml).handle == ("index", 2)


def test_a_uuid_nvml_does_not_know_among_several_gpus_is_no_guess():
    """Device 0 was read instead: another GPU's energy and power, stored as this run's."""
    nvml = fake_pynvml(uuids=("GPU-abc",), devices=4)

    with pytest.raises(NvmlUnavailableError, match=r"NVML knows no GPU GPU-other .* among its 4"):
        open_counters("other", nvml=nvml)


def test_nvml_that_cannot_start_is_unavailable_not_a_crash():
    """pynvml installed, the driver's library not mounted (a container without the utility
    capability): nvmlInit raised, and the measurement failed for good."""
    with pytest.raises(NvmlUnavailableError, match=r"NVML cannot read the GPU .*Not Found"):
        open_counters("abc", nvml=fake_pynvml(loads=False))
