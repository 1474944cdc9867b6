"""The numpy language model: hand-written gradients against finite differences, causality,
dtypes kept, and AdamW."""

from __future__ import annotations

import numpy as np
import pytest

from discospace.actuator.cpu_train.layers import causal_attention, cross_entropy
from discospace.actuator.cpu_train.model import AdamW, init_parameters, loss_and_gradients
from discospace.actuator.cpu_train.presets import PRESETS, ModelPreset

SMALL = ModelPreset("check", vocab_size=11, d_model=8, n_layers=2, n_heads=2, learning_rate=1e-2)


def _perturbed_parameters(seed: int = 1) -> dict[str, np.ndarray]:
    """Float64 weights moved away from their initial values (unit norms would hide errors)."""
    params = init_parameters(SMALL, max_length=6, dtype=np.float64, seed=seed)
    rng = np.random.default_rng(seed)
    return {name: value + rng.normal(0.0, 0.3, value.shape) for name, value in params.items()}


def _numeric_gradient(params, batch, name, index, step=1e-5) -> float:
    flat = params[name].reshape(-1)
    original = flat[index]
    flat[index] = original + step
    above, _ = loss_and_gradients(params, SMALL, batch)
    flat[index] = original - step
    below, _ = loss_and_gradients(params, SMALL, batch)
    flat[index] = original
    return (above - below) / (2 * step)


def test_every_parameter_gradient_matches_finite_differences():
    params = _perturbed_parameters()
    batch = np.random.default_rng(0).integers(0, SMALL.vocab_size, size=(3, 6))
    _, grads = loss_and_gradients(params, SMALL, batch)
    rng = np.random.default_rng(2)

    assert set(grads) == set(params)
    for name, value in params.items():
        assert grads[name].shape == value.shape, name
        for index in rng.choice(value.size, size=min(value.size, 12), replace=False):
            numeric = _numeric_gradient(params, batch, name, index)
            analytic = grads[name].reshape(-1)[index]
            assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-8), f"{name}[{index}]"


def test_positions_beyond_the_sequence_get_no_gradient():
    params = _perturbed_parameters()
    batch = np.random.default_rng(0).integers(0, SMALL.vocab_size, size=(2, 4))  # 3 inputs of 6

    _, grads = loss_and_gradients(params, SMALL, batch)

    assert np.all(grads["pos_emb"][3:] == 0)
    assert np.any(grads["pos_emb"][:3] != 0)


def test_attention_at_a_position_does_not_see_later_tokens():
    rng = np.random.default_rng(0)
    qkv = rng.normal(size=(2, 5, 3 * 8))
    changed = qkv.copy()
    changed[:, 3:] += rng.normal(size=changed[:, 3:].shape)

    before, _ = causal_attention(qkv, heads=2)
    after, _ = causal_attention(changed, heads=2)

    np.testing.assert_array_equal(before[:, :3], after[:, :3])
    assert not np.allclose(before[:, 3:], after[:, 3:])


def test_cross_entropy_of_uniform_logits_is_the_log_of_the_vocabulary():
    loss, d_logits = cross_entropy(np.zeros((2, 3, 7)), np.zeros((2, 3), dtype=np.int64))

    assert loss == pytest.approx(np.log(7))
    np.testing.assert_allclose(d_logits.sum(axis=-1), 0.0, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_training_keeps_the_dtype_of_the_weights(dtype):
    preset = PRESETS["tiny"]
    params = init_parameters(preset, max_length=8, dtype=dtype, seed=0)
    batch = np.random.default_rng(0).integers(0, preset.vocab_size, size=(2, 9))

    _, grads = loss_and_gradients(params, preset, batch)
    AdamW(preset.learning_rate).step(params, grads)

    assert {value.dtype for value in params.values()} == {np.dtype(dtype)}
    assert {value.dtype for value in grads.values()} == {np.dtype(dtype)}


def test_the_parameter_count_of_a_preset_matches_its_weights():
    for preset in PRESETS.values():
        params = init_parameters(preset, max_length=16, dtype=np.float32, seed=0)
        assert sum(value.size for value in params.values()) == preset.parameter_count(16)


def test_adamw_moves_a_weight_against_its_gradient_by_about_the_learning_rate():
    params = {"h0.attn.w_qkv": np.ones((2, 2)), "h0.ln1.g": np.ones(2)}
    grads = {"h0.attn.w_qkv": np.full((2, 2), 3.0), "h0.ln1.g": np.full(2, -0.5)}

    AdamW(learning_rate=0.1, weight_decay=0.5).step(params, grads)

    np.testing.assert_allclose(params["h0.attn.w_qkv"], 1.0 * (1 - 0.05) - 0.1, rtol=1e-6)
    np.testing.assert_allclose(params["h0.ln1.g"], 1.1, rtol=1e-6)  # no decay on norms
