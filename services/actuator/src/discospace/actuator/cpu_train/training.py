"""One training run of the numpy model: until a number of batches or seconds, timed.

A warm-up step runs first, under `tracemalloc` (numpy reports its buffers to it), which gives
the peak memory of training: weights, the optimizer's moments (created at that step), the batch,
the activations kept for the backward pass and the gradients. Every later step allocates the
same, so the timed steps run untraced and their timing is not slowed by the tracing; the model's
set-up and the warm-up step are not timed. `losses[0]` is the warm-up step's (initial) loss.

The batches come from the synthetic Markov stream unless the caller hands in a `BatchSource`
(the `data_recipe` actuator trains on real text this way); the trained weights come back in
the result, so the caller can evaluate the model on data of its own.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from discospace.actuator.cpu_train.data import MarkovStream
from discospace.actuator.cpu_train.model import (
    AdamW,
    Parameters,
    init_parameters,
    loss_and_gradients,
)
from discospace.actuator.cpu_train.plan import TrainConfig
from discospace.actuator.cpu_train.presets import ModelPreset

np.random.default_rng  # noqa: B018  (numpy imports numpy.random lazily, at its first use: here,
# not inside the first run's traced peak, which then counted its 0.6 MiB of modules)

FINAL_LOSS_WINDOW = 10
"""The final loss is the mean over the last steps (up to this many): one step's loss is noisy."""

BatchSource = Callable[[int, int, int], NDArray[np.int64]]
"""`source(index, batch_size, length)`: batch `index`, (batch_size, length) token ids below the
preset's vocabulary size; a pure function of its arguments, so a run is reproducible."""


@dataclass(frozen=True)
class TrainResult:
    """What a run measured."""

    steps: int
    """Timed steps, after the warm-up step."""
    runtime_s: float
    peak_memory_bytes: int
    losses: tuple[float, ...]
    tokens_per_batch: int
    batch_size: int
    parameters: Parameters = field(default_factory=dict, repr=False, compare=False)
    """The trained weights."""

    @property
    def tokens_per_second(self) -> float:
        return self.steps * self.tokens_per_batch / self.runtime_s

    @property
    def samples_per_second(self) -> float:
        return self.steps * self.batch_size / self.runtime_s

    @property
    def initial_loss(self) -> float:
        return self.losses[0]

    @property
    def final_loss(self) -> float:
        """The mean loss of the last timed steps (the warm-up's, an untrained model's, only
        when no step was timed)."""
        timed = self.losses[1:] or self.losses
        return float(np.mean(timed[-FINAL_LOSS_WINDOW:]))

    @property
    def diverged(self) -> bool:
        return not all(math.isfinite(loss) for loss in self.losses)


def train(
    config: TrainConfig,
    timer: Callable[[], float] = time.perf_counter,
    batches: BatchSource | None = None,
    peak_limit_bytes: int | None = None,
) -> TrainResult:
    """Train from random weights on `batches` (default: the synthetic stream): one traced
    warm-up step, then the timed steps until the config's stop. Only the timed steps count in
    the runtime. A warm-up peak above `peak_limit_bytes` ends the run there (no timed step):
    every later step allocates the same, so the run would only confirm it."""
    preset = config.preset
    with traced_peak() as peak:
        source = batches or MarkovStream.create(preset.vocab_size, config.seed).batch
        params = init_parameters(preset, config.max_length, config.dtype, config.seed)
        optimizer = AdamW(preset.learning_rate)
        losses = [_step(params, optimizer, preset, source(0, *_shape(config)))]
    over = peak_limit_bytes is not None and peak.bytes > peak_limit_bytes
    begun = timer()
    while not over and not config.finished(len(losses) - 1, timer() - begun):
        batch = source(len(losses), *_shape(config))
        losses.append(_step(params, optimizer, preset, batch))
    return TrainResult(
        steps=len(losses) - 1,
        runtime_s=max(timer() - begun, 1e-9),
        peak_memory_bytes=peak.bytes,
        losses=tuple(losses),
        tokens_per_batch=config.tokens_per_batch,
        batch_size=config.batch_size,
        parameters=params,
    )


def _shape(config: TrainConfig) -> tuple[int, int]:
    """A sample holds one token more than the model reads: the last one is only a target."""
    return config.batch_size, config.max_length + 1


def _step(params: dict, optimizer: AdamW, preset: ModelPreset, batch: np.ndarray) -> float:
    loss, grads = loss_and_gradients(params, preset, batch)
    optimizer.step(params, grads)
    return loss


@dataclass
class TracedPeak:
    """Peak bytes allocated inside a `traced_peak` block, known when the block ends."""

    bytes: int = 0


@contextmanager
def traced_peak() -> Iterator[TracedPeak]:
    """Measures the peak bytes allocated inside the block, also when tracemalloc already runs."""
    peak = TracedPeak()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    baseline = tracemalloc.get_traced_memory()[0]
    try:
        yield peak
    finally:
        peak.bytes = max(0, tracemalloc.get_traced_memory()[1] - baseline)
        if not was_tracing:
            tracemalloc.stop()
