"""What several benchmarks share: the fine-tuning experiment and spaces they measure, the
broker they run on (one given by `KAFKA_BOOTSTRAP_SERVERS`, else a local one for the run), and
how a figure's rounds are printed."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.events import OperationParameters, OperationStarted, SpaceRegistered
from discospace.testing.kafka import (
    BrokerUnavailableError,
    KafkaBroker,
    broker_from_env,
    find_script,
    start_local_broker,
)

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 11, 21, tzinfo=UTC)
"""When the benchmarks' histories begin."""
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


def registered(spec: SpaceSpec, space_id: str) -> SpaceRegistered:
    """`spec` registered as `space_id` at `T0`, measured by `EXPERIMENT`."""
    return SpaceRegistered(
        event_id="registered",
        occurred_at=T0,
        submission_id="sub",
        space_id=space_id,
        spec=spec,
        experiments=(EXPERIMENT,),
    )


def walk_started(
    space_id: str, operation_id: str = "op-bench", **parameters: Any
) -> OperationStarted:
    """A random walk over every entity of `space_id` (seed 1, and `parameters`) started at
    `T0`; its event id is "started" for "op-bench", else "started-<operation id>"."""
    event_id = "started" if operation_id == "op-bench" else f"started-{operation_id}"
    return OperationStarted(
        event_id=event_id,
        occurred_at=T0,
        operation_id=operation_id,
        space_id=space_id,
        operator="random_walk",
        parameters=OperationParameters(number_entities="all", seed=1, **parameters),
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
