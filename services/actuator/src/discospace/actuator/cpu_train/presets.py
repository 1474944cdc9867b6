"""Model size presets of the benchmark's language model, shared by `cpu_train` and `gpu_train`.

A preset fixes the vocabulary (and so the synthetic stream's alphabet), the width, the depth
and the number of attention heads; the sequence length and the batch are the entity's. The
learning rate shrinks with the width, as it does for real transformers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPreset:
    """The shape of one model size."""

    name: str
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    learning_rate: float

    @property
    def d_ff(self) -> int:
        """Width of the MLP's hidden layer."""
        return 4 * self.d_model

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def parameter_count(self, max_length: int) -> int:
        """Trainable numbers for sequences of `max_length` tokens (position table included)."""
        d, v, f = self.d_model, self.vocab_size, self.d_ff
        per_layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d)
        return v * d + max_length * d + self.n_layers * per_layer + 2 * d + d * v


PRESETS: dict[str, ModelPreset] = {
    preset.name: preset
    for preset in (
        ModelPreset("tiny", vocab_size=128, d_model=32, n_layers=1, n_heads=2, learning_rate=1e-2),
        ModelPreset("small", vocab_size=256, d_model=64, n_layers=2, n_heads=4, learning_rate=5e-3),
        ModelPreset(
            "medium", vocab_size=512, d_model=128, n_layers=4, n_heads=4, learning_rate=3e-3
        ),
        ModelPreset(
            "large", vocab_size=1024, d_model=256, n_layers=6, n_heads=8, learning_rate=2e-3
        ),
    )
}
"""Every model size, smallest first."""


def preset_named(name: object) -> ModelPreset | str:
    """The preset called `name`, or why there is none (one sentence)."""
    if isinstance(name, str) and name in PRESETS:
        return PRESETS[name]
    return f"model_size {name!r} is not a preset: use one of {', '.join(PRESETS)}"
