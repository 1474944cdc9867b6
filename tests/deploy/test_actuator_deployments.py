"""The actuator deployments of compose and Kubernetes run the workload their name promises.

`actuator-cpu` trains the cpu_train model on pool `cpu` from the plain actuator image;
`actuator-gpu` runs gpu_train on pool `gpu` from the CUDA image, with a GPU handed in. None runs
the `synthetic` test device, which is what an actuator without DISCOSPACE_ACTUATOR_ACTUATOR runs.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
EXPECTED = {
    # deployment: (plugin, pool, Dockerfile, image)
    "actuator-cpu": ("cpu_train", "cpu", "services/actuator/Dockerfile", "discospace/actuator"),
    "actuator-gpu": (
        "gpu_train",
        "gpu",
        "services/actuator/Dockerfile.gpu",
        "discospace/actuator-gpu",
    ),
}


def _plugins() -> set[str]:
    project = tomllib.loads((REPO / "services" / "actuator" / "pyproject.toml").read_text())
    return set(project["project"]["entry-points"]["discospace.actuators"])


def _compose() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load(
        (DEPLOY / "compose" / "docker-compose.yml").read_text()
    )["services"]
    return services


def _k8s_actuators() -> dict[str, dict[str, Any]]:
    deployments = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Deployment":
                labels = doc["spec"]["template"]["metadata"]["labels"]
                if labels["app.kubernetes.io/name"] == "actuator":
                    deployments[doc["metadata"]["name"]] = doc
    return deployments


def test_the_expected_plugins_exist() -> None:
    assert {plugin for plugin, *_ in EXPECTED.values()} <= _plugins()


def test_every_compose_actuator_is_an_expected_one() -> None:
    actuators = {
        name
        for name, service in _compose().items()
        if service.get("build", {}).get("dockerfile", "").startswith("services/actuator/")
    }

    assert actuators == set(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_the_compose_actuator_runs_its_plugin_on_its_pool_from_its_image(name: str) -> None:
    plugin, pool, dockerfile, image = EXPECTED[name]
    service = _compose()[name]

    assert service["environment"]["DISCOSPACE_ACTUATOR_ACTUATOR"] == plugin
    assert service["environment"]["DISCOSPACE_ACTUATOR_POOL"] == pool
    assert service["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert service["build"] == {"context": "../..", "dockerfile": dockerfile}
    assert service["image"].split(":")[0] == image


def test_the_compose_gpu_worker_gets_the_gpus_only_in_its_profile() -> None:
    service = _compose()["actuator-gpu"]

    assert service["profiles"] == ["gpu"]
    [device] = service["deploy"]["resources"]["reservations"]["devices"]
    assert (device["driver"], device["capabilities"]) == ("nvidia", ["gpu"])


def test_the_compose_prometheus_scrapes_every_actuator_in_the_actuator_job() -> None:
    config = yaml.safe_load((DEPLOY / "compose" / "prometheus.yml").read_text())
    [job] = [job for job in config["scrape_configs"] if job["job_name"] == "actuator"]
    hosts = {target.split(":")[0] for group in job["static_configs"] for target in group["targets"]}
    hosts |= {name for sd in job.get("dns_sd_configs", []) for name in sd["names"]}

    assert hosts == set(EXPECTED)
    assert job["honor_labels"] is True  # a worker's own pool label wins over its target's


def test_every_k8s_actuator_is_an_expected_one() -> None:
    assert set(_k8s_actuators()) == set(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_the_k8s_actuator_runs_its_plugin_on_its_pool_from_its_image(name: str) -> None:
    plugin, pool, _dockerfile, image = EXPECTED[name]
    pod = _k8s_actuators()[name]["spec"]["template"]
    [container] = pod["spec"]["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}

    assert env["DISCOSPACE_ACTUATOR_ACTUATOR"] == plugin
    assert (
        env["DISCOSPACE_ACTUATOR_POOL"] == pool == pod["metadata"]["labels"]["discospace.dev/pool"]
    )
    assert container["image"].split(":")[0] == image


def test_the_k8s_gpu_worker_asks_for_a_gpu_and_its_image_is_tagged() -> None:
    pod = _k8s_actuators()["actuator-gpu"]["spec"]["template"]
    [container] = pod["spec"]["containers"]
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())

    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "discospace/actuator-gpu" in {image["name"] for image in kustomization["images"]}
