"""From kept documents to the batches `cpu_train`'s model trains on, and its held-out loss.

- `token_ids`: a character-level tokenizer: a character's code point when it is below the
  model's vocabulary size, else the last id (for `tiny`'s 128: ASCII, and one id for every
  other character);
- `training_tokens`: the kept documents joined by blank lines, as in their files;
- `window_batches`: batch `i` holds windows starting at offsets drawn from a generator seeded
  with (seed, i), so a run is a pure function of the kept text and the seed;
- `heldout_loss`: the mean next-character loss (nats) of the trained model over the first
  `EVAL_WINDOWS` non-overlapping windows of the evaluation prose (the same for every recipe).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from discospace.actuator.cpu_train.model import Parameters, loss_and_gradients
from discospace.actuator.cpu_train.presets import ModelPreset
from discospace.actuator.cpu_train.training import BatchSource

EVAL_WINDOWS = 128
EVAL_BATCH = 32
SEPARATOR = "\n\n"

Tokens = NDArray[np.int64]


def token_ids(text: str, vocab_size: int) -> Tokens:
    """One id per character: its code point, or `vocab_size - 1` when that is not below it."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int64)
    return np.minimum(codes, vocab_size - 1)


def training_tokens(documents: Sequence[str], vocab_size: int) -> Tokens:
    """The documents as one stream, each followed by a blank line."""
    return token_ids("".join(document + SEPARATOR for document in documents), vocab_size)


def window_batches(tokens: Tokens, seed: int) -> BatchSource:
    """Batches of windows of `tokens` at seeded random offsets."""

    def batch(index: int, batch_size: int, length: int) -> Tokens:
        rng = np.random.default_rng([seed, index])
        starts = rng.integers(0, len(tokens) - length + 1, size=batch_size)
        return tokens[starts[:, None] + np.arange(length)]

    return batch


def evaluation_windows(prose: Sequence[str], vocab_size: int, length: int) -> Tokens:
    """Up to `EVAL_WINDOWS` consecutive windows of `length` tokens of the evaluation prose."""
    tokens = token_ids(SEPARATOR.join(prose), vocab_size)
    count = min(EVAL_WINDOWS, len(tokens) // length)
    return tokens[: count * length].reshape(count, length)


def heldout_loss(params: Parameters, preset: ModelPreset, windows: Tokens) -> float:
    """Mean next-token loss over every window (each predicts its tokens after the first)."""
    total = 0.0
    for start in range(0, len(windows), EVAL_BATCH):
        chunk = windows[start : start + EVAL_BATCH]
        loss, _ = loss_and_gradients(params, preset, chunk)
        total += loss * len(chunk)
    return total / len(windows)
