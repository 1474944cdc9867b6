"""How much memory a training step needs, estimated before running it.

The count follows what the model keeps alive: per block, the activations its backward pass
reads (about 21 values per token and width unit, plus one attention matrix per head), the
logits and their softmax over the vocabulary, the attention scores' temporaries, and the
parameters with their gradients; the optimizer's two moments per parameter come at the update,
when the activations are gone. The estimate is checked against the peak measured by
`tracemalloc` in the tests (within a factor of 1.5 either way).
"""

from __future__ import annotations

import numpy as np

from discospace.actuator.cpu_train.presets import ModelPreset

MIB = 2**20
FIXED_OVERHEAD = MIB
"""Python objects, the stream's tables, random generators: about a mebibyte in any run."""
ACTIVATIONS_PER_BLOCK = 21
"""Kept per token and width unit by one block: norms 4, q/k/v 3, attention output 1, block
input 1, MLP hidden, GELU's tanh and its output 3 x 4."""


def estimated_peak_bytes(preset: ModelPreset, batch_size: int, max_length: int, dtype: str) -> int:
    """Bytes a training step of this configuration holds at its peak."""
    size = np.dtype(dtype).itemsize
    tokens = batch_size * max_length
    parameters = preset.parameter_count(max_length)
    attention = batch_size * preset.n_heads * max_length * max_length
    kept = preset.n_layers * (ACTIVATIONS_PER_BLOCK * tokens * preset.d_model + attention)
    transient = 3 * tokens * preset.vocab_size + 3 * tokens * preset.d_model + 3 * attention
    step = (2 * parameters + kept + transient) * size
    update = 4 * parameters * size
    batch = 16 * batch_size * (max_length + 1)  # int64 tokens and the float64 draws making them
    return max(step, update) + batch + FIXED_OVERHEAD


def estimated_peak_mb(preset: ModelPreset, batch_size: int, max_length: int, dtype: str) -> float:
    return estimated_peak_bytes(preset, batch_size, max_length, dtype) / MIB


def beyond_numpy(error: ValueError) -> bool:
    """Whether numpy refused an array larger than it can address at all ("array is too big",
    "Maximum allowed size exceeded"): a configuration out of memory, not a fault (a smaller
    but still huge one raises `MemoryError`)."""
    message = str(error).lower()
    return "too big" in message or "maximum allowed" in message


def beyond_numpy_reason(estimate_mb: float) -> str:
    """The invalid reason of a configuration `beyond_numpy`."""
    return f"out of memory: numpy cannot make arrays that large ({estimate_mb:.3g} MiB estimated)"
