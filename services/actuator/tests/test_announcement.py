"""A worker announces its actuator's catalog, pool and GPU model at every start."""

from __future__ import annotations

from datetime import timedelta

from discospace.actuator.domain import announcement
from discospace.actuator.synthetic import SyntheticActuator


def test_the_announcement_names_the_catalog_pool_and_gpu_model_keyed_by_actuator_and_pool(
    clock, topics
):
    catalog = SyntheticActuator().catalog()

    event = announcement("synthetic", "a100", "w0", catalog, clock(), "NVIDIA-A100-80GB-PCIe")

    assert (event.actuator, event.pool, event.worker_id) == ("synthetic", "a100", "w0")
    assert event.gpu_model == "NVIDIA-A100-80GB-PCIe"
    assert [spec.experiment for spec in event.experiments] == ["benchmark"]
    assert event.key() == b"synthetic@a100"
    assert event.topic(topics) == topics.actuators


def test_each_start_of_a_worker_announces_with_a_new_id(clock):
    first = announcement("synthetic", "a100", "w0", (), clock())
    later = announcement("synthetic", "a100", "w0", (), clock() + timedelta(seconds=1))

    assert first.event_id != later.event_id
