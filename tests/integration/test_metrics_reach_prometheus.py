"""One line per service: its metrics really arrive in a real Prometheus server."""

from __future__ import annotations

import pytest

from discospace.runtime.contracts import SERVICES

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", SERVICES)
def test_the_metrics_of_the_service_arrive_in_prometheus(name, every_service_scraped):
    services, prometheus = every_service_scraped

    [info] = prometheus.wait_for(f'discospace_service_info{{job="{name}"}}')
    consumed = prometheus.wait_for(f'faststream_received_messages_total{{job="{name}"}}')
    [up] = prometheus.query(f'up{{job="{name}"}}')

    assert info.labels["service"] == name
    assert (info.value, up.value) == (1, 1)
    assert {sample.labels["app_name"] for sample in consumed} == {name}
    assert services[name].process.poll() is None
