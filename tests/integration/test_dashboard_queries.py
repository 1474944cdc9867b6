"""Every query of every Grafana dashboard returns a series from a real Prometheus.

The services run as processes (an actuator worker included), a real Prometheus scrapes each as
its own job (named like the service, as in `deploy/`), a small operation runs so that the
message and measurement series move (one walk measures, a second one over the same store is
answered from the memo), and then each panel's query is evaluated through Prometheus's HTTP
API with Grafana's variables replaced by what a dashboard would send. A query that returns no
series is a panel that reads "No data": a metric nothing exports, a label set that appears
only after the first failure, or a typo.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from discospace.testing.loop import REPO, Loop
from discospace.testing.prometheus import PrometheusClient, PrometheusFactory

pytestmark = pytest.mark.integration

DASHBOARDS = REPO / "deploy" / "grafana" / "dashboards"
GRAFANA_VARIABLES = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
    "job": ".*",
}
"""What Grafana puts in place of each variable a query may use (`$job`: every service)."""
POOL = "steady"
WORKER = {"experiments": [{"experiment": "benchmark"}], "latency_s": 0.01}
ENTITY_SPACE = [
    {"name": "batch_size", "values": [1, 2, 4, 8]},
    {"name": "model_max_length", "values": [512, 1024]},
]


def dashboard_queries() -> list[tuple[str, str]]:
    """(where, expr) for every target of every panel of every dashboard, rows' panels too."""
    queries = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        for panel in _panels(json.loads(path.read_text())["panels"]):
            for target in panel.get("targets", []):
                where = f"{path.stem}: {panel['title']} ({target['refId']})"
                queries.append((where, target["expr"]))
    return queries


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def as_grafana_sends_it(expr: str) -> str:
    """`expr` with `$name` and `${name}` replaced; an unknown variable fails the test."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in GRAFANA_VARIABLES, f"unknown Grafana variable ${name} in {expr}"
        return GRAFANA_VARIABLES[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, expr)


def write_yaml(loop: Loop, name: str, content: dict[str, Any]) -> str:
    path = loop.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(content))
    return str(path)


def walk(loop: Loop, name: str, batch_sizes: list[int]) -> None:
    """Register a space on the shared store over `batch_sizes` and walk all of it."""
    entity_space = [ENTITY_SPACE[0] | {"values": batch_sizes}, ENTITY_SPACE[1]]
    space = {
        "sample_store": "store-dashboard",
        "entity_space": entity_space,
        "measurement_space": [{"actuator": "synthetic", "experiment": "benchmark"}],
    }
    space_id = loop.cli_ok("space", "create", "-f", write_yaml(loop, name, space)).strip()
    operation = {"operator": "random_walk", "parameters": {"number_entities": "all"}}
    loop.cli_ok(
        "operation",
        "create",
        "-f",
        write_yaml(loop, f"walk-{name}", operation),
        "--space",
        space_id,
        "--watch",
        "--interval",
        "0.2",
    )


@pytest.fixture(scope="module")
def scraped_loop(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    """Every service as a process, an actuator worker of pool `steady` among them."""
    loop = Loop(kafka_bootstrap, tmp_path_factory.mktemp("dashboard"))
    try:
        for name in ("registry", "explorer", "sampler", "projector"):
            loop.start(name)
        loop.actuator("actuator", POOL, WORKER)
        loop.wait_healthy()
        loop.wait_for_catalog({"benchmark"})
        yield loop
    finally:
        loop.stop()


@pytest.fixture(scope="module")
def prometheus(scraped_loop: Loop, module_prometheus_server: PrometheusFactory) -> PrometheusClient:
    """A Prometheus scraping every service of the loop, once a walk measured and another one
    reused (so the series that move with traffic have moved)."""
    jobs = {name: [f"127.0.0.1:{s.port}"] for name, s in scraped_loop.services.items()}
    client = module_prometheus_server(jobs)
    client.wait_for("up == 1", until=lambda samples: len(samples) == len(jobs))
    walk(scraped_loop, "measured", [1, 2, 4, 8])
    walk(scraped_loop, "reused", [1, 2])
    client.wait_for('discospace_measurements_total{outcome="valid"} == 8')  # scraped: all 8
    client.wait_for('discospace_memo_hits_total{job="sampler"} == 4')  # and the 4 reused
    client.wait_for("sum(discospace_operations_finished_total) == 2")  # both walks' ends
    return client


@pytest.mark.parametrize(
    ("where", "expr"), [pytest.param(*query, id=query[0]) for query in dashboard_queries()]
)
def test_the_dashboard_query_returns_a_series(
    where: str, expr: str, prometheus: PrometheusClient
) -> None:
    promql = as_grafana_sends_it(expr)

    try:
        samples = prometheus.wait_for(promql, timeout_s=10)
    except TimeoutError:
        samples = []

    assert samples, f"{where} reads 'No data': {promql}"


def test_the_dashboards_have_queries_to_check() -> None:
    assert len(dashboard_queries()) >= 16


def _query_of(title: str) -> str:
    [expr] = [expr for where, expr in dashboard_queries() if f": {title} (A)" in where]
    return as_grafana_sends_it(expr)


def test_the_operator_panels_show_what_the_two_walks_did(
    scraped_loop: Loop, prometheus: PrometheusClient
) -> None:
    measured = prometheus.wait_for(
        _query_of("Measurements in the time range, by pool and outcome"),
        until=lambda samples: any(s.value >= 7.5 for s in samples),
    )
    [ratio] = prometheus.query(_query_of("Memo hit ratio (time range)"))
    finished = prometheus.query(_query_of("Operations finished in the time range, by stop reason"))
    lag = prometheus.wait_for(  # every message read, once the walks are over
        _query_of("Consumer lag by group and topic"),
        until=lambda samples: bool(samples) and all(s.value == 0 for s in samples),
    )

    # Counts over a range are Prometheus's increase(): extrapolated towards the range's ends
    # (seen here up to 15% over on a loaded machine), so the panels are held to the right
    # order of magnitude, and the exact counts are read from the counters they are built on.
    by_outcome = {(s.labels["pool"], s.labels["outcome"]): s.value for s in measured}
    assert 7 <= by_outcome[(POOL, "valid")] <= 12
    assert by_outcome[(POOL, "timeout")] == 0
    assert 0.2 <= ratio.value <= 0.5  # exactly 4 pairs reused of 12 answered, below
    assert 1.5 <= sum(s.value for s in finished) <= 3
    [valid] = prometheus.query(f'discospace_measurements_total{{pool="{POOL}",outcome="valid"}}')
    [hits] = prometheus.query('discospace_memo_hits_total{job="sampler"}')
    assert (valid.value, hits.value) == (8, 4)
    groups = {f"{scraped_loop.topics.prefix}.{name}" for name in ("registry", "sampler")}
    assert groups | {"explorer (no group)"} <= {s.labels["group"] for s in lag}
