"""The seam between `gpu_train` and torch: what a training backend offers, how one is loaded
(lazily: torch is an optional extra), and which errors mean "out of memory".

`torch_train` is the real backend; tests pass fakes with the same three functions.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from discospace.actuator.cpu_train.plan import TrainConfig

NO_CUDA = "no CUDA GPU: gpu_train needs torch with CUDA"
_OUT_OF_MEMORY_WORDS = ("out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED")


@dataclass(frozen=True)
class TorchRun:
    """What the timed steps of a run measured."""

    steps: int
    runtime_s: float
    losses: tuple[float, ...]
    """The warm-up step's loss first, then one per timed step."""
    max_memory_reserved_bytes: int
    device_memory_bytes: int


class Backend(Protocol):
    """A module that trains the workload on a GPU (`torch_train`, or a fake)."""

    def cuda_devices(self) -> int: ...

    def device_uuid(self, index: int = 0) -> str | None: ...

    def train_on_device(
        self, config: TrainConfig, around_timed_steps: Callable[[], AbstractContextManager[object]]
    ) -> TorchRun: ...


def load_backend() -> Backend | None:
    """The torch backend, or None when torch cannot be imported here."""
    try:
        from discospace.actuator.gpu_train import torch_train
    except (ImportError, OSError):  # no torch, or torch without its CUDA libraries
        return None
    backend: Backend = torch_train
    return backend


def is_out_of_memory(error: BaseException) -> bool:
    """Whether `error` says the device ran out of memory.

    `torch.cuda.OutOfMemoryError` (`torch.OutOfMemoryError` in newer releases) by its name, so
    this needs no torch; and the RuntimeErrors that CUDA libraries raise on a failed allocation.
    """
    if type(error).__name__ == "OutOfMemoryError":
        return True
    message = str(error)
    return isinstance(error, RuntimeError) and any(w in message for w in _OUT_OF_MEMORY_WORDS)


def first_line(error: BaseException) -> str:
    """The first line of an error's message (torch's OOM message runs to a paragraph)."""
    lines = str(error).strip().splitlines()
    return lines[0].rstrip(". ") if lines else type(error).__name__
