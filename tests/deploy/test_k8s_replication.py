"""The Kubernetes services create their topics replicated: an event acknowledged by every
in-sync replica (acks=all) survives a lost broker only when there is more than one replica, and
the services create their topics with their own setting, not the cluster's default."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
SETTINGS = {
    "registry": "discospace.registry.settings:RegistrySettings",
    "explorer": "discospace.explorer.settings:ExplorerSettings",
    "sampler": "discospace.sampler.settings:SamplerSettings",
    "projector": "discospace.projector.settings:ProjectorSettings",
    "actuator": "discospace.actuator.settings:ActuatorSettings",
}


def _deployments() -> list[dict[str, Any]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        found += [
            d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "Deployment"
        ]
    return found


@pytest.mark.parametrize("deployment", _deployments(), ids=lambda d: d["metadata"]["name"])
def test_every_deployment_creates_its_topics_with_three_replicas(
    deployment: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    service = deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value") for item in container.get("env", [])}
    module, _, name = SETTINGS[service].partition(":")
    settings_class = getattr(importlib.import_module(module), name)
    prefix = settings_class.model_config["env_prefix"]

    assert env.get(f"{prefix}TOPIC_REPLICATION") == "3"
    monkeypatch.setenv(f"{prefix}TOPIC_REPLICATION", env[f"{prefix}TOPIC_REPLICATION"])
    assert settings_class().topic_replication == 3  # the variable the service reads
