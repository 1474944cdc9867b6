"""A decoder-only transformer language model in numpy: token and position embeddings, pre-norm
blocks of causal self-attention and a GELU MLP, a final layer norm and an untied output layer.

`loss_and_gradients` runs the forward pass and the hand-written backward pass; `AdamW` steps
the parameters. Parameters live in one flat dict by name, so the optimizer, the gradient check
and the memory count treat them alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import DTypeLike, NDArray

from discospace.actuator.cpu_train.layers import (
    Array,
    AttentionCache,
    NormCache,
    causal_attention,
    causal_attention_backward,
    cross_entropy,
    gelu,
    gelu_backward,
    layer_norm,
    layer_norm_backward,
    linear,
    linear_backward,
)
from discospace.actuator.cpu_train.presets import ModelPreset

Parameters = dict[str, Array]
INIT_STD = 0.02


def init_parameters(
    preset: ModelPreset, max_length: int, dtype: DTypeLike, seed: int
) -> Parameters:
    """Random weights (normal, std 0.02; residual outputs scaled by depth), unit norms."""
    rng = np.random.default_rng(seed)
    d, f, v = preset.d_model, preset.d_ff, preset.vocab_size
    residual_std = INIT_STD / math.sqrt(2 * preset.n_layers)

    def normal(std: float, *shape: int) -> Array:
        return rng.normal(0.0, std, shape).astype(dtype)

    params: Parameters = {
        "tok_emb": normal(INIT_STD, v, d),
        "pos_emb": normal(INIT_STD, max_length, d),
    }
    for i in range(preset.n_layers):
        params |= {
            f"h{i}.ln1.g": np.ones(d, dtype),
            f"h{i}.ln1.b": np.zeros(d, dtype),
            f"h{i}.attn.w_qkv": normal(INIT_STD, d, 3 * d),
            f"h{i}.attn.b_qkv": np.zeros(3 * d, dtype),
            f"h{i}.attn.w_out": normal(residual_std, d, d),
            f"h{i}.attn.b_out": np.zeros(d, dtype),
            f"h{i}.ln2.g": np.ones(d, dtype),
            f"h{i}.ln2.b": np.zeros(d, dtype),
            f"h{i}.mlp.w_in": normal(INIT_STD, d, f),
            f"h{i}.mlp.b_in": np.zeros(f, dtype),
            f"h{i}.mlp.w_out": normal(residual_std, f, d),
            f"h{i}.mlp.b_out": np.zeros(d, dtype),
        }
    return params | {
        "ln_f.g": np.ones(d, dtype),
        "ln_f.b": np.zeros(d, dtype),
        "head.w": normal(INIT_STD, d, v),
    }


@dataclass(frozen=True)
class BlockCache:
    """What one block's backward pass needs from its forward pass."""

    x: Array
    norm1: NormCache
    normed1: Array
    attention: AttentionCache
    attended: Array
    norm2: NormCache
    normed2: Array
    hidden: Array
    tanh: Array
    activated: Array


def _block_forward(params: Parameters, i: int, x: Array, heads: int) -> tuple[Array, BlockCache]:
    p = f"h{i}."
    normed1, norm1 = layer_norm(x, params[p + "ln1.g"], params[p + "ln1.b"])
    qkv = linear(normed1, params[p + "attn.w_qkv"], params[p + "attn.b_qkv"])
    attended, attention = causal_attention(qkv, heads)
    x2 = x + linear(attended, params[p + "attn.w_out"], params[p + "attn.b_out"])
    normed2, norm2 = layer_norm(x2, params[p + "ln2.g"], params[p + "ln2.b"])
    hidden = linear(normed2, params[p + "mlp.w_in"], params[p + "mlp.b_in"])
    activated, tanh = gelu(hidden)
    out = x2 + linear(activated, params[p + "mlp.w_out"], params[p + "mlp.b_out"])
    cache = BlockCache(
        x, norm1, normed1, attention, attended, norm2, normed2, hidden, tanh, activated
    )
    return out, cache


def _block_backward(
    params: Parameters, i: int, d_out: Array, cache: BlockCache, grads: Parameters
) -> Array:
    """Adds this block's parameter gradients to `grads`; returns the gradient of its input."""
    p = f"h{i}."
    d_act, grads[p + "mlp.w_out"], grads[p + "mlp.b_out"] = linear_backward(
        d_out, cache.activated, params[p + "mlp.w_out"]
    )
    d_hidden = gelu_backward(d_act, cache.hidden, cache.tanh)
    d_normed2, grads[p + "mlp.w_in"], grads[p + "mlp.b_in"] = linear_backward(
        d_hidden, cache.normed2, params[p + "mlp.w_in"]
    )
    d_x2, grads[p + "ln2.g"], grads[p + "ln2.b"] = layer_norm_backward(d_normed2, cache.norm2)
    d_x2 = d_x2 + d_out
    d_attended, grads[p + "attn.w_out"], grads[p + "attn.b_out"] = linear_backward(
        d_x2, cache.attended, params[p + "attn.w_out"]
    )
    d_qkv = causal_attention_backward(d_attended, cache.attention)
    d_normed1, grads[p + "attn.w_qkv"], grads[p + "attn.b_qkv"] = linear_backward(
        d_qkv, cache.normed1, params[p + "attn.w_qkv"]
    )
    d_x, grads[p + "ln1.g"], grads[p + "ln1.b"] = layer_norm_backward(d_normed1, cache.norm1)
    return d_x + d_x2


def _embedding_backward(
    d_x: Array, tokens: NDArray[np.integer], params: Parameters, grads: Parameters
) -> None:
    length = tokens.shape[1]
    d_tok = np.zeros_like(params["tok_emb"])
    np.add.at(d_tok, tokens.reshape(-1), d_x.reshape(-1, d_x.shape[-1]))
    d_pos = np.zeros_like(params["pos_emb"])
    d_pos[:length] = d_x.sum(axis=0)
    grads["tok_emb"], grads["pos_emb"] = d_tok, d_pos


def loss_and_gradients(
    params: Parameters, preset: ModelPreset, batch: NDArray[np.integer]
) -> tuple[float, Parameters]:
    """Mean next-token loss over `batch` (B, T+1 tokens) and the gradient of every parameter."""
    inputs, targets = batch[:, :-1], batch[:, 1:]
    x = params["tok_emb"][inputs] + params["pos_emb"][: inputs.shape[1]]
    caches = []
    for i in range(preset.n_layers):
        x, cache = _block_forward(params, i, x, preset.n_heads)
        caches.append(cache)
    final, final_norm = layer_norm(x, params["ln_f.g"], params["ln_f.b"])
    loss, d_logits = cross_entropy(linear(final, params["head.w"]), targets)

    grads: Parameters = {}
    d_final, grads["head.w"], _ = linear_backward(d_logits, final, params["head.w"])
    d_x, grads["ln_f.g"], grads["ln_f.b"] = layer_norm_backward(d_final, final_norm)
    for i in reversed(range(preset.n_layers)):
        d_x = _block_backward(params, i, d_x, caches[i], grads)
    _embedding_backward(d_x, inputs, params, grads)
    return loss, grads


@dataclass
class AdamW:
    """Adam with decoupled weight decay on the matrices (not on norms, biases or embeddings)."""

    learning_rate: float
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.01
    steps: int = 0
    moments: dict[str, tuple[Array, Array]] = field(default_factory=dict)

    def step(self, params: Parameters, grads: Parameters) -> None:
        """Updates `params` in place from `grads`; the moments are created at the first step."""
        self.steps += 1
        beta1, beta2 = self.betas
        correction1 = 1.0 - beta1**self.steps
        correction2 = 1.0 - beta2**self.steps
        for name, param in params.items():
            grad = grads[name]
            m, v = self.moments.setdefault(name, (np.zeros_like(param), np.zeros_like(param)))
            m *= beta1
            m += (1.0 - beta1) * grad
            v *= beta2
            v += (1.0 - beta2) * (grad * grad)
            if self._decays(name):
                param *= 1.0 - self.learning_rate * self.weight_decay
            param -= (self.learning_rate / correction1) * m / (np.sqrt(v / correction2) + self.eps)

    @staticmethod
    def _decays(name: str) -> bool:
        return name == "head.w" or ".w_" in name
