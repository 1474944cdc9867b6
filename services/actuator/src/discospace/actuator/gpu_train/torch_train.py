"""The `cpu_train` workload in torch, on a CUDA device: the same decoder-only transformer (pre-norm
blocks of causal self-attention and a GELU MLP, untied output layer), the same presets, the same
synthetic Markov stream, AdamW with the same settings.

This module imports torch at the top: only `gpu_train`'s measurement imports it, inside the
worker's child process, so the actuator package imports without torch.

The batches are generated on the CPU before the timed steps (up to `DATA_BATCHES` of them, then
cycled), so that generating data does not limit the throughput measured on the GPU. Mixed
precision: bfloat16 and float16 run under autocast with float32 weights (float16 with a gradient
scaler); float32 runs as it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import torch
from torch import nn
from torch.nn import functional

from discospace.actuator.cpu_train.data import MarkovStream
from discospace.actuator.cpu_train.model import INIT_STD
from discospace.actuator.cpu_train.plan import TrainConfig
from discospace.actuator.cpu_train.presets import ModelPreset
from discospace.actuator.gpu_train.backend import TorchRun

DATA_BATCHES = 32
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class Block(nn.Module):
    def __init__(self, preset: ModelPreset) -> None:
        super().__init__()
        d = preset.d_model
        self.heads = preset.n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp_in, self.mlp_out = nn.Linear(d, preset.d_ff), nn.Linear(preset.d_ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, width))
        hidden = functional.gelu(self.mlp_in(self.ln2(x)), approximate="tanh")
        return x + self.mlp_out(hidden)


class LanguageModel(nn.Module):
    def __init__(self, preset: ModelPreset, max_length: int) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(preset.vocab_size, preset.d_model)
        self.pos_emb = nn.Embedding(max_length, preset.d_model)
        self.blocks = nn.ModuleList(Block(preset) for _ in range(preset.n_layers))
        self.ln_f = nn.LayerNorm(preset.d_model)
        self.head = nn.Linear(preset.d_model, preset.vocab_size, bias=False)
        self._init(preset)

    def _init(self, preset: ModelPreset) -> None:
        residual_std = INIT_STD / (2 * preset.n_layers) ** 0.5
        for name, param in self.named_parameters():
            if param.dim() == 2:
                std = residual_std if name.endswith(("out.weight", "mlp_out.weight")) else INIT_STD
                nn.init.normal_(param, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(param)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok_emb(tokens) + self.pos_emb(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class Trainer:
    """A model, its optimizer and its batches on one device, ready to step."""

    def __init__(self, config: TrainConfig, device: str = "cuda") -> None:
        torch.manual_seed(config.seed)
        self.config, self.device = config, torch.device(device)
        self.model = LanguageModel(config.preset, config.max_length).to(self.device)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(),
            lr=config.preset.learning_rate,
            betas=(0.9, 0.95),
            weight_decay=0.01,
        )
        self.dtype = DTYPES[config.dtype]
        self.scaler = torch.amp.GradScaler(enabled=self.dtype is torch.float16)
        stream = MarkovStream.create(config.preset.vocab_size, config.seed)
        count = min(DATA_BATCHES, config.max_batches or DATA_BATCHES)
        self.batches = [
            torch.from_numpy(stream.batch(i, config.batch_size, config.max_length + 1)).to(
                self.device
            )
            for i in range(count)
        ]

    def step(self, index: int) -> torch.Tensor:
        """One optimizer step on batch `index` (cycled); the loss stays on the device."""
        batch = self.batches[index % len(self.batches)]
        with torch.autocast(
            self.device.type, dtype=self.dtype, enabled=self.dtype is not torch.float32
        ):
            logits = self.model(batch[:, :-1])
            loss = functional.cross_entropy(logits.flatten(0, 1).float(), batch[:, 1:].flatten())
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def train_on_device(
    config: TrainConfig,
    around_timed_steps: Callable[[], AbstractContextManager[object]] = nullcontext,
    device: str = "cuda",
    timer: Callable[[], float] = time.perf_counter,
) -> TorchRun:
    """One warm-up step, then the timed steps until the config's stop.

    `around_timed_steps()` returns a context manager entered around the timed steps (the GPU
    monitor). Only the timed steps count in the runtime; `losses[0]` is the warm-up loss.
    """
    trainer = Trainer(config, device)
    losses = [trainer.step(0)]
    trainer.synchronize()
    if trainer.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(trainer.device)
    with around_timed_steps():
        begun = timer()
        while not config.finished(len(losses) - 1, timer() - begun):
            losses.append(trainer.step(len(losses)))
        trainer.synchronize()
        runtime = timer() - begun
    return TorchRun(
        steps=len(losses) - 1,
        runtime_s=max(runtime, 1e-9),
        losses=tuple(torch.stack(losses).float().cpu().tolist()),
        max_memory_reserved_bytes=_reserved(trainer.device),
        device_memory_bytes=_total_memory(trainer.device),
    )


def device_uuid(index: int = 0) -> str | None:
    """The CUDA device's UUID, to find the same device in NVML."""
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return str(uuid) if uuid is not None else None


def cuda_devices() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _reserved(device: torch.device) -> int:
    return int(torch.cuda.max_memory_reserved(device)) if device.type == "cuda" else 0


def _total_memory(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    return int(torch.cuda.get_device_properties(device).total_memory)
