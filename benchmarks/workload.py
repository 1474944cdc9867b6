"""What several benchmarks share: the fine-tuning experiment and spaces they measure, the
broker they run on (one given by `KAFKA_BOOTSTRAP_SERVERS`, else a local one for the run), and
how a figure's rounds are printed."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from pathlib import Path

from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.testing.kafka import (
    BrokerUnavailableError,
    KafkaBroker,
    broker_from_env,
    find_script,
    start_local_broker,
)

REPO = Path(__file__).resolve().parents[1]
EXPERIMENT = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune",
    target_properties=("train_tokens_per_second", "peak_gpu_memory_mib"),
    required_properties=("model_name", "batch_size", "number_gpus"),
)


def finetune_space(
    sample_store: str, models: Sequence[str], batch_sizes: Sequence[int]
) -> SpaceSpec:
    """A space of `EXPERIMENT` over models x batch sizes x 1, 2, 4 or 8 GPUs."""
    return SpaceSpec(
        sample_store=sample_store,
        entity_space=(
            PropertySpec(name="model_name", values=tuple(models)),
            PropertySpec(name="batch_size", values=tuple(batch_sizes)),
            PropertySpec(name="number_gpus", values=(1, 2, 4, 8)),
        ),
        measurement_space=(ExperimentRef(actuator="SFTTrainer", experiment="finetune"),),
    )


def broker(workdir: Path) -> KafkaBroker:
    """The broker of `KAFKA_BOOTSTRAP_SERVERS` when one answers there, else deploy/local/kafka.sh
    started (plaintext) on a free port with its state under `workdir` (stop it after)."""
    try:
        return broker_from_env(os.environ.get("KAFKA_BOOTSTRAP_SERVERS"))
    except BrokerUnavailableError:
        os.environ.setdefault("KAFKA_SECURITY", "plaintext")
        return start_local_broker(find_script([REPO]), workdir / "kafka")


def line(name: str, values: Sequence[float], form: str) -> None:
    """Print `name: min / median / max` of `values`, each in `form` (e.g. "{:.2f}")."""
    figures = (min(values), statistics.median(values), max(values))
    print(f"{name}: min / median / max {' / '.join(form.format(v) for v in figures)}")
