"""The Kubernetes scrape config gives each pod the job compose and `make up` give its service,
so the Grafana dashboards (grouped and filtered by `job`) work on Kubernetes too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _scraped_pods() -> list[dict[str, Any]]:
    """The pod templates of every Deployment in deploy/k8s that asks to be scraped."""
    pods = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "Deployment":
                template = doc["spec"]["template"]
                if template["metadata"].get("annotations", {}).get("prometheus.io/scrape"):
                    pods.append(template)
    return pods


def _relabelled(job: dict[str, Any], meta: dict[str, str]) -> dict[str, str] | None:
    """Prometheus's relabelling of one target (the rules this config uses: keep, replace)."""
    labels = dict(meta)
    for rule in job["relabel_configs"]:
        value = ";".join(labels.get(name, "") for name in rule["source_labels"])
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        if rule.get("action") == "keep":
            if match is None:
                return None
            continue
        if match is not None:
            labels[rule["target_label"]] = match.expand(
                rule.get("replacement", "$1").replace("$", "\\")
            )
    return labels


def test_every_scraped_pod_is_in_its_services_job_at_its_metrics_port() -> None:
    config = yaml.safe_load((DEPLOY / "k8s" / "prometheus.yml").read_text())
    [job] = config["scrape_configs"]
    compose = yaml.safe_load((DEPLOY / "compose" / "prometheus.yml").read_text())
    compose_jobs = {scrape["job_name"] for scrape in compose["scrape_configs"]}
    pods = _scraped_pods()
    assert {pod["metadata"]["labels"]["app.kubernetes.io/name"] for pod in pods} == compose_jobs

    for pod in pods:
        labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
        meta = {
            "__address__": "10.0.0.7:9999",
            "__meta_kubernetes_pod_name": "pod-0",
            **{
                "__meta_kubernetes_pod_annotation_" + re.sub(r"[^a-z0-9]", "_", k): v
                for k, v in annotations.items()
            },
            **{
                "__meta_kubernetes_pod_label_" + re.sub(r"[^a-z0-9]", "_", k): v
                for k, v in labels.items()
            },
        }
        target = _relabelled(job, meta)
        assert target is not None
        assert target["job"] == labels["app.kubernetes.io/name"]
        assert target["__address__"] == f"10.0.0.7:{annotations['prometheus.io/port']}"
        assert target["__metrics_path__"] == "/metrics"
        if target["job"] == "actuator":
            assert target["pool"] == labels["discospace.dev/pool"]
    assert job["honor_labels"] is True  # a worker's own pool label wins over its pod's
