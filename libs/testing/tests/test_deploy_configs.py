"""deploy/ stays consistent: every service is scraped, built, probed and charted the same way."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from discospace.testing.prometheus import find_tool

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
PORTS = {"registry": 8101, "explorer": 8102, "sampler": 8103, "actuator": 8104, "projector": 8105}
DATASOURCE_INPUT = "DS_PROMETHEUS"


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _jobs(config: dict[str, Any]) -> dict[str, list[str]]:
    return {
        job["job_name"]: [t for group in job["static_configs"] for t in group["targets"]]
        for job in config["scrape_configs"]
    }


def _dashboards() -> list[tuple[Path, dict[str, Any]]]:
    paths = sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))
    assert paths
    return [(path, json.loads(path.read_text())) for path in paths]


def _dashboard_panels() -> list[dict[str, Any]]:
    return [p for _, d in _dashboards() for p in d["panels"] if p["type"] != "row"]


def _datasource_uses(dashboard: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(where, datasource) of every panel, target and query variable of `dashboard`."""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        yield panel["title"], panel.get("datasource")
        for target in panel["targets"]:
            yield f"{panel['title']} ({target['refId']})", target.get("datasource")
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"${variable['name']}", variable.get("datasource")


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


def test_every_dashboard_asks_for_its_prometheus_datasource_on_import() -> None:
    for path, dashboard in _dashboards():
        (datasource_input,) = dashboard["__inputs"]
        uses = list(_datasource_uses(dashboard))

        assert datasource_input["name"] == DATASOURCE_INPUT, path.name
        assert (datasource_input["type"], datasource_input["pluginId"]) == (
            "datasource",
            "prometheus",
        )
        assert {"type": "datasource", "id": "prometheus"} in [
            {"type": r["type"], "id": r["id"]} for r in dashboard["__requires"]
        ]
        assert len(uses) > len(dashboard["panels"]), path.name
        for where, datasource in uses:
            assert datasource == {"type": "prometheus", "uid": f"${{{DATASOURCE_INPUT}}}"}, where


def test_every_dashboard_also_resolves_its_datasource_when_provisioned() -> None:
    # Provisioning ignores __inputs: a datasource variable of the same name stands in for it,
    # choosing Grafana's default Prometheus, which the provisioning makes the discospace one.
    (datasource,) = _yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")[
        "datasources"
    ]

    assert (datasource["type"], datasource["isDefault"]) == ("prometheus", True)
    for path, dashboard in _dashboards():
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        variable = variables[DATASOURCE_INPUT]
        assert (variable["type"], variable["query"]) == ("datasource", "prometheus"), path.name
        assert variable.get("hide") == 2, "chosen once, on import or by provisioning"
        assert "uid" not in json.dumps(variable), "no uid of one particular Grafana"


OPERATOR_VIEWS = {
    "consumer lag per group and topic": ("discospace_consumer_lag", {"group", "topic"}),
    "measurements by pool and outcome": ("discospace_measurements_total", {"pool", "outcome"}),
    "operations running": ("discospace_operations_active", set()),
    "operations finished": ("discospace_operations_finished_total", {"stop_reason"}),
    "memo hit ratio": ("discospace_memo_hits_total", set()),
    "dead letters by reason": ("discospace_dead_lettered_total", {"reason_kind"}),
}
"""What an operator looks for: a metric, and the labels it is shown by."""


@pytest.mark.parametrize("view", OPERATOR_VIEWS)
def test_the_dashboard_shows_what_an_operator_looks_for(view: str) -> None:
    metric, by = OPERATOR_VIEWS[view]
    queries = [t["expr"] for p in _dashboard_panels() for t in p["targets"]]

    assert any(metric in q and by <= _grouped_by(q) for q in queries), view


def _grouped_by(query: str) -> set[str]:
    """The labels of every `by (...)` clause of `query`."""
    clauses = re.findall(r"by \(([^)]*)\)", query)
    return {label.strip() for clause in clauses for label in clause.split(",")}


def test_the_dashboards_service_variable_lists_discospaces_services_only() -> None:
    """`label_values(up, job)` with `allValue: .*` showed every job of a shared Prometheus
    (a kubelet, a node exporter down) in "Services up", a red "down" not discospace's."""
    dashboard = json.loads((DEPLOY / "grafana/dashboards/discospace-services.json").read_text())
    [job] = [v for v in dashboard["templating"]["list"] if v["name"] == "job"]
    assert job["definition"] == "label_values(discospace_service_info, job)"
    assert job["query"]["query"] == job["definition"]
    assert job.get("allValue") is None  # "All" is the listed services, not every job
