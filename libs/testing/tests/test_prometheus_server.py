"""The prometheus_server fixture: a real Prometheus scrapes a real metrics endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, start_http_server

from discospace.testing.kafka import free_port
from discospace.testing.prometheus import (
    PrometheusFactory,
    PrometheusQueryError,
    PrometheusUnavailableError,
    find_binary,
    find_tool,
    scrape_config,
)


@pytest.fixture
def metrics_endpoint() -> Iterator[tuple[str, Counter]]:
    """A tiny prometheus_client HTTP server with one counter, like a service's /metrics."""
    registry = CollectorRegistry()
    counter = Counter("demo_jobs_done", "Jobs done by the demo.", ["outcome"], registry=registry)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    yield f"127.0.0.1:{port}", counter
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.mark.integration
def test_a_scraped_counter_arrives_in_prometheus_with_its_value_and_job(
    prometheus_server: PrometheusFactory, metrics_endpoint: tuple[str, Counter]
) -> None:
    target, counter = metrics_endpoint
    counter.labels(outcome="valid").inc(3)
    counter.labels(outcome="invalid").inc()

    prometheus = prometheus_server({"demo": [target]})
    samples = prometheus.wait_for('demo_jobs_done_total{outcome="valid"}')
    (up,) = prometheus.query('up{job="demo"}')

    assert [(s.labels["job"], s.labels["instance"], s.value) for s in samples] == [
        ("demo", target, 3.0)
    ]
    assert up.value == 1.0


@pytest.mark.integration
def test_a_target_that_does_not_answer_is_reported_down_with_the_error(
    prometheus_server: PrometheusFactory,
) -> None:
    silent = f"127.0.0.1:{free_port()}"

    prometheus = prometheus_server([silent])
    prometheus.wait_for(f'up{{instance="{silent}"}}')
    (target,) = prometheus.targets()

    assert prometheus.query(f'up{{instance="{silent}"}}')[0].value == 0.0
    assert (target["labels"]["job"], target["health"]) == ("targets", "down")
    assert "connection refused" in target["lastError"]


@pytest.mark.integration
def test_a_query_prometheus_cannot_parse_raises_a_query_error(
    prometheus_server: PrometheusFactory,
) -> None:
    prometheus = prometheus_server([])

    with pytest.raises(PrometheusQueryError, match="parse error"):
        prometheus.query("sum(")


def test_the_config_scrapes_every_job_at_the_interval_with_a_timeout_that_fits() -> None:
    config = scrape_config({"registry": ["127.0.0.1:8101"], "sampler": ["h:1", "h:2"]}, 0.5)

    assert config["global"]["scrape_interval"] == config["global"]["scrape_timeout"] == "500ms"
    assert config["scrape_configs"] == [
        {"job_name": "registry", "static_configs": [{"targets": ["127.0.0.1:8101"]}]},
        {"job_name": "sampler", "static_configs": [{"targets": ["h:1", "h:2"]}]},
    ]


def test_a_plain_list_of_targets_becomes_one_job() -> None:
    (job,) = scrape_config(["127.0.0.1:9000"])["scrape_configs"]

    assert job == {"job_name": "targets", "static_configs": [{"targets": ["127.0.0.1:9000"]}]}


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_missing_binary_says_how_to_fetch_it(tmp_path: Path) -> None:
    not_executable = tmp_path / "prometheus"
    not_executable.write_text("")
    environ = {"PROMETHEUS_BIN": str(not_executable), "HOME": str(tmp_path), "PATH": ""}

    with pytest.raises(PrometheusUnavailableError, match=r"deploy/local/prometheus.sh fetch"):
        find_binary(environ)


def test_the_binary_fetched_into_the_cache_comes_before_the_one_on_the_path(
    tmp_path: Path,
) -> None:
    fetched = _executable(tmp_path / "cache" / "discospace" / "prometheus" / "bin" / "prometheus")
    on_path = _executable(tmp_path / "usr" / "bin" / "prometheus")
    environ = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": str(on_path.parent)}

    assert find_binary(environ) == str(fetched)
    assert find_binary({"PATH": str(on_path.parent)}) == str(on_path)


def test_promtool_is_found_beside_the_chosen_prometheus_or_in_the_cache(tmp_path: Path) -> None:
    chosen = _executable(tmp_path / "opt" / "prometheus")
    beside = _executable(tmp_path / "opt" / "promtool")
    cached = _executable(tmp_path / "prom-cache" / "bin" / "promtool")

    assert find_tool("promtool", {"PROMETHEUS_BIN": str(chosen)}) == str(beside)
    assert find_tool("promtool", {"PROMETHEUS_CACHE_DIR": str(cached.parents[1])}) == str(cached)
