"""deploy/ stays consistent: every service is scraped, built, probed and charted the same way."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.testing.prometheus import PrometheusFactory, find_tool

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
PORTS = {"registry": 8101, "explorer": 8102, "sampler": 8103, "actuator": 8104, "projector": 8105}
DATASOURCE_UID = "discospace-prometheus"


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _jobs(config: dict[str, Any]) -> dict[str, list[str]]:
    return {
        job["job_name"]: [t for group in job["static_configs"] for t in group["targets"]]
        for job in config["scrape_configs"]
    }


def _dashboard_panels() -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / "grafana" / "dashboards").glob("*.json")):
        panels += [p for p in json.loads(path.read_text())["panels"] if p["type"] != "row"]
    return panels


def _k8s_objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        objects += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return objects


# The scrape config of `make up` is written by deploy/local/services.sh from the ports it uses:
# tests/deploy/test_local_scripts.py checks it.
@pytest.mark.integration
def test_prometheus_accepts_the_compose_scrape_config() -> None:
    promtool = find_tool("promtool", os.environ)

    result = subprocess.run(
        [promtool, "check", "config", str(DEPLOY / "compose" / "prometheus.yml")],
        capture_output=True,
        text=True,
    )

    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_builds_every_service_and_prometheus_scrapes_it_by_its_compose_name() -> None:
    compose = _yaml(DEPLOY / "compose" / "docker-compose.yml")["services"]
    jobs = _jobs(_yaml(DEPLOY / "compose" / "prometheus.yml"))

    for name, port in PORTS.items():
        (target,) = jobs[name]
        host = target.split(":")[0]
        assert target == f"{host}:{port}"
        assert compose[host]["build"] == {
            "context": "../..",
            "dockerfile": f"services/{name}/Dockerfile",
        }
        assert compose[host]["ports"] == [f"{port}:{port}"]
        assert compose[host]["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"


@pytest.mark.parametrize("name", PORTS)
def test_each_dockerfile_runs_its_service_module_and_checks_health_on_its_port(name: str) -> None:
    dockerfile = (REPO / "services" / name / "Dockerfile").read_text()
    port = PORTS[name]

    assert f"EXPOSE {port}\n" in dockerfile
    assert f'CMD ["python", "-m", "discospace.{name}"]' in dockerfile
    assert f"http://127.0.0.1:{port}/health" in dockerfile
    assert f"DISCOSPACE_{name.upper()}_HTTP_HOST=0.0.0.0" in dockerfile
    assert f"COPY services/{name} services/{name}" in dockerfile


def test_every_k8s_deployment_is_probed_on_health_and_scraped_on_its_own_port() -> None:
    objects = _k8s_objects()
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    configmaps = {o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"}

    assert {
        d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] for d in deployments
    } == set(PORTS)
    for deployment in deployments:
        pod = deployment["spec"]["template"]
        (container,) = pod["spec"]["containers"]
        port = PORTS[pod["metadata"]["labels"]["app.kubernetes.io/name"]]
        assert container["ports"] == [{"name": "http", "containerPort": port}]
        assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(port)
        for probe in ("readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}
        assert {ref["configMapRef"]["name"] for ref in container["envFrom"]} <= configmaps


def test_every_k8s_service_selects_the_pods_of_its_deployment() -> None:
    objects = _k8s_objects()
    pods = {
        o["metadata"]["name"]: o["spec"]["template"]["metadata"]["labels"]
        for o in objects
        if o["kind"] == "Deployment"
    }

    for service in (o for o in objects if o["kind"] == "Service"):
        labels = pods[service["metadata"]["name"]]
        assert service["spec"]["selector"].items() <= labels.items()


def test_every_dashboard_panel_queries_the_provisioned_prometheus() -> None:
    (datasource,) = _yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")[
        "datasources"
    ]
    panels = _dashboard_panels()

    assert datasource["uid"] == DATASOURCE_UID
    assert panels
    for panel in panels:
        assert panel["datasource"]["uid"] == DATASOURCE_UID, panel["title"]
        assert panel["targets"], panel["title"]


def test_the_dashboard_charts_faststream_traffic_dead_letters_and_domain_metrics() -> None:
    queries = " ".join(t["expr"] for p in _dashboard_panels() for t in p["targets"])

    for metric in (
        "faststream_received_messages_total",
        "faststream_published_messages_total",
        "faststream_received_processed_messages_duration_seconds_bucket",
        "discospace_dead_lettered_total",
        "discospace_measurements_total",
        "discospace_operations_active",
    ):
        assert metric in queries


@pytest.mark.integration
def test_prometheus_parses_every_dashboard_query(prometheus_server: PrometheusFactory) -> None:
    prometheus = prometheus_server([])
    grafana_variables = {"$__rate_interval": "1m", "$job": ".*"}

    for panel in _dashboard_panels():
        for target in panel["targets"]:
            expr = re.sub(r"\$\w+", lambda m: grafana_variables[m.group(0)], target["expr"])
            prometheus.query(expr)
