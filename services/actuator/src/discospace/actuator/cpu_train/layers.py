"""The layers of the numpy language model, each a forward pass that keeps what its backward
pass needs, and the backward pass written out by hand.

Arrays keep the dtype they come in (float32 or float64): constants are Python floats, which
numpy 2 does not let widen an array. Shapes: B batch, T tokens, D width, H heads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.floating]

LAYER_NORM_EPS = 1e-5
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


def linear(x: Array, w: Array, b: Array | None = None) -> Array:
    out = x @ w
    return out if b is None else out + b


def linear_backward(d_out: Array, x: Array, w: Array) -> tuple[Array, Array, Array]:
    """Gradients of `x @ w + b` with respect to x, w and b."""
    flat_x = x.reshape(-1, x.shape[-1])
    flat_d = d_out.reshape(-1, d_out.shape[-1])
    return d_out @ w.T, flat_x.T @ flat_d, flat_d.sum(axis=0)


@dataclass(frozen=True)
class NormCache:
    normalised: Array
    inverse_std: Array
    gain: Array


def layer_norm(x: Array, gain: Array, bias: Array) -> tuple[Array, NormCache]:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    inverse_std = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + LAYER_NORM_EPS)
    normalised = centred * inverse_std
    return normalised * gain + bias, NormCache(normalised, inverse_std, gain)


def layer_norm_backward(d_out: Array, cache: NormCache) -> tuple[Array, Array, Array]:
    """Gradients with respect to the input, the gain and the bias."""
    xhat = cache.normalised
    width = xhat.shape[-1]
    d_xhat = d_out * cache.gain
    d_x = (cache.inverse_std / width) * (
        width * d_xhat
        - d_xhat.sum(axis=-1, keepdims=True)
        - xhat * (d_xhat * xhat).sum(axis=-1, keepdims=True)
    )
    axes = tuple(range(d_out.ndim - 1))
    return d_x, (d_out * xhat).sum(axis=axes), d_out.sum(axis=axes)


def gelu(x: Array) -> tuple[Array, Array]:
    """GELU (tanh form) of x, and tanh's value, which the backward pass reuses."""
    tanh = np.tanh(_GELU_K * (x + _GELU_C * x * x * x))
    return 0.5 * x * (1.0 + tanh), tanh


def gelu_backward(d_out: Array, x: Array, tanh: Array) -> Array:
    slope = _GELU_K * (1.0 + 3.0 * _GELU_C * x * x)
    return d_out * (0.5 * (1.0 + tanh) + 0.5 * x * (1.0 - tanh * tanh) * slope)


def causal_mask(length: int) -> NDArray[np.bool_]:
    """True where a token may not look: at later positions."""
    return np.triu(np.ones((length, length), dtype=bool), k=1)


def softmax(scores: Array) -> Array:
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class AttentionCache:
    q: Array
    k: Array
    v: Array
    probs: Array


def split_heads(x: Array, heads: int) -> Array:
    batch, length, width = x.shape
    return x.reshape(batch, length, heads, width // heads).transpose(0, 2, 1, 3)


def merge_heads(x: Array) -> Array:
    batch, heads, length, head_dim = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * head_dim)


def causal_attention(qkv: Array, heads: int) -> tuple[Array, AttentionCache]:
    """Multi-head causal self-attention of projected queries, keys and values (B, T, 3D)."""
    q, k, v = (split_heads(part, heads) for part in np.split(qkv, 3, axis=-1))
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.transpose(0, 1, 3, 2)) * scale
    scores[..., causal_mask(scores.shape[-1])] = -np.inf
    probs = softmax(scores)
    return merge_heads(probs @ v), AttentionCache(q, k, v, probs)


def causal_attention_backward(d_out: Array, cache: AttentionCache) -> Array:
    """Gradient with respect to the projected queries, keys and values (B, T, 3D)."""
    d_y = split_heads(d_out, cache.q.shape[1])
    scale = 1.0 / math.sqrt(cache.q.shape[-1])
    d_probs = d_y @ cache.v.transpose(0, 1, 3, 2)
    d_v = cache.probs.transpose(0, 1, 3, 2) @ d_y
    d_scores = cache.probs * (d_probs - (d_probs * cache.probs).sum(axis=-1, keepdims=True))
    d_q = (d_scores @ cache.k) * scale
    d_k = (d_scores.transpose(0, 1, 3, 2) @ cache.q) * scale
    return np.concatenate([merge_heads(d_q), merge_heads(d_k), merge_heads(d_v)], axis=-1)


def cross_entropy(logits: Array, targets: NDArray[np.integer]) -> tuple[float, Array]:
    """Mean next-token loss in nats, and its gradient with respect to the logits."""
    probs = softmax(logits)
    flat = probs.reshape(-1, probs.shape[-1])
    rows = np.arange(flat.shape[0])
    picked = flat[rows, targets.reshape(-1)]
    loss = float(-np.log(np.maximum(picked, np.finfo(flat.dtype).tiny)).mean())
    flat[rows, targets.reshape(-1)] -= 1.0
    return loss, probs / flat.shape[0]
