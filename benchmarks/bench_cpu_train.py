"""Benchmark of the `cpu_train` actuator on this machine: training tokens per second by model
size preset and batch size, and by BLAS thread count.

Run: .venv/bin/python benchmarks/bench_cpu_train.py  (or `make bench`); `--help` for the grid.
Each configuration is one measurement of the plugin (`measure_blocking`, as the worker's child
process runs it), trained for `--seconds` after its warm-up step. The default grid takes about
a minute on an idle 2-core machine, longer under load. The machine's cores may be shared (the
development machine has 2, used by several people at once): the load average is printed with
the figures, which move with it.

Baseline, measured right after each point of the size grid under the same thread limit: the
bare numpy training step of the same model (`loss_and_gradients` and `AdamW.step`, the work the
actuator times) on random tokens of the same shape, for the same seconds, with no actuator
around it (no data stream, warm-up trace, memory cap or outcome). The ratio actuator / bare,
per point, is printed with min / median / max over the grid: what the actuator costs beyond the
training it measures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

import numpy as np
from threadpoolctl import threadpool_limits
from workload import line

from discospace.actuator.cpu_train import CpuTrainActuator, CpuTrainParameters
from discospace.actuator.cpu_train.model import AdamW, init_parameters, loss_and_gradients
from discospace.actuator.cpu_train.presets import PRESETS
from discospace.actuator.plugin import MeasurementTask
from discospace.core import Entity, Experiment
from discospace.core.measurement import ValidMeasurement

SIZES = ("tiny", "small", "medium")
BATCH_SIZES = (1, 4, 16, 64)
THREADS = (1, 2)


def arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=SIZES, help="model size presets")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=BATCH_SIZES)
    parser.add_argument("--length", type=int, default=128, help="model_max_length (tokens)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads of the size grid")
    parser.add_argument("--seconds", type=int, default=2, help="training seconds per point")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    return parser.parse_args(argv)


def measure(size: str, batch_size: int, threads: int, options: argparse.Namespace) -> dict:
    actuator = CpuTrainActuator(CpuTrainParameters(duration=f"{options.seconds}sec"))
    [spec] = actuator.catalog()
    experiment = Experiment.from_spec(spec).parameterize({"dtype": options.dtype})
    entity = Entity.of(
        {
            "model_size": size,
            "batch_size": batch_size,
            "model_max_length": options.length,
            "number_threads": threads,
        }
    )
    outcome = actuator.measure_blocking(MeasurementTask("bench", entity, experiment))
    if not isinstance(outcome, ValidMeasurement):
        raise SystemExit(f"{entity.label}: {outcome}")
    return outcome.values


def bare(size: str, batch_size: int, threads: int, options: argparse.Namespace) -> float:
    """Tokens per second of the bare numpy step of the same model, for the same seconds."""
    preset = PRESETS[size]
    rng = np.random.default_rng(0)
    with threadpool_limits(limits=threads):
        params = init_parameters(preset, options.length, options.dtype, 0)
        optimizer = AdamW(preset.learning_rate)

        def step() -> None:
            tokens = rng.integers(0, preset.vocab_size, (batch_size, options.length + 1))
            _, grads = loss_and_gradients(params, preset, tokens)
            optimizer.step(params, grads)

        step()  # the warm-up the actuator does not time either
        steps, begun = 0, time.perf_counter()
        while time.perf_counter() - begun < options.seconds:
            step()
            steps += 1
        elapsed = time.perf_counter() - begun
    return steps * batch_size * options.length / elapsed


def table(
    title: str,
    rows: dict[str, dict[int, float]],
    columns: Sequence[int],
    unit: str,
    spec: str = ",.0f",
) -> None:
    print(f"\n{title}")
    print(f"{'':>10}" + "".join(f"{f'{unit}={c}':>14}" for c in columns))
    for name, cells in rows.items():
        print(f"{name:>10}" + "".join(f"{cells[c]:>14{spec}}" for c in columns))


def main(argv: Sequence[str]) -> int:
    options = arguments(argv)
    load = os.getloadavg()[0]
    print(
        f"cpu_train: model_max_length={options.length}, dtype={options.dtype}, "
        f"{options.seconds}s of training per point; {os.cpu_count()} cores, "
        f"load average {load:.2f} at the start (cores may be shared: figures move with the load)"
    )
    begun = time.perf_counter()
    speed: dict[str, dict[int, float]] = {}
    memory: dict[str, dict[int, float]] = {}
    baseline: dict[str, dict[int, float]] = {}
    for size in options.sizes:
        for batch_size in options.batch_sizes:
            values = measure(size, batch_size, options.threads, options)
            speed.setdefault(size, {})[batch_size] = float(values["train_tokens_per_second"])
            memory.setdefault(size, {})[batch_size] = float(values["peak_memory_mb"])
            baseline.setdefault(size, {})[batch_size] = bare(
                size, batch_size, options.threads, options
            )
    table(
        f"train_tokens_per_second, number_threads={options.threads}",
        speed,
        options.batch_sizes,
        "batch",
    )
    table(
        f"bare numpy step, tokens per second, number_threads={options.threads}",
        baseline,
        options.batch_sizes,
        "batch",
    )
    ratios = {
        size: {b: speed[size][b] / baseline[size][b] for b in options.batch_sizes}
        for size in options.sizes
    }
    table("ratio actuator / bare numpy step", ratios, options.batch_sizes, "batch", ".2f")
    every = [ratio for cells in ratios.values() for ratio in cells.values()]
    print()
    line("ratio actuator / bare numpy step, over the grid", every, "{:.2f}x")
    table("peak_memory_mb (MiB)", memory, options.batch_sizes, "batch", ",.1f")
    largest = max(options.batch_sizes)
    threaded = {
        size: {
            t: float(measure(size, largest, t, options)["train_tokens_per_second"]) for t in THREADS
        }
        for size in options.sizes
    }
    table(
        f"train_tokens_per_second by number_threads, batch={largest}", threaded, THREADS, "threads"
    )
    elapsed = time.perf_counter() - begun
    print(f"\n{elapsed:.0f}s in all; load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
