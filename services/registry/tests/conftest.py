"""Events the registry tests send: an actuator catalog and spaces that use it (or not)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from discospace.core import ExperimentRef, ExperimentSpec, PropertySpec, SpaceSpec
from discospace.events import ActuatorRegistered, SpaceSubmitted, TopicNames, new_event

AT = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)


def fixed_clock() -> datetime:
    return AT


FINETUNE = ExperimentSpec(
    actuator="SFTTrainer",
    experiment="finetune-full-v1.2.0",
    target_properties=("train_tokens_per_second",),
    required_properties=("batch_size", "number_gpus"),
)


def space_spec(experiment: str = "finetune-full-v1.2.0") -> SpaceSpec:
    return SpaceSpec(
        sample_store="store-a",
        entity_space=(
            PropertySpec(name="batch_size", values=(1, 2, 4, 8)),
            PropertySpec(name="number_gpus", values=(1, 2)),
        ),
        measurement_space=(ExperimentRef(actuator="SFTTrainer", experiment=experiment),),
    )


def submission(experiment: str = "finetune-full-v1.2.0", sid: str = "sub-1") -> SpaceSubmitted:
    return new_event(
        SpaceSubmitted,
        fixed_clock,
        submission_id=sid,
        spec=space_spec(experiment),
        submitted_by="tester",
    )


def catalog() -> ActuatorRegistered:
    return new_event(
        ActuatorRegistered,
        fixed_clock,
        actuator="SFTTrainer",
        pool="a100",
        experiments=(FINETUNE,),
        worker_id="worker-1",
    )


@pytest.fixture
def make_submission():
    return submission


@pytest.fixture
def make_catalog():
    return catalog


@pytest.fixture
def clock():
    return fixed_clock


@pytest.fixture
def topics() -> TopicNames:
    return TopicNames.unique("registry")
