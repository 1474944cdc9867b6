"""A service as a real process: /health, /metrics with FastStream's counters, clean SIGTERM."""

from __future__ import annotations

import pytest

from discospace.events import SpaceRejected

pytestmark = pytest.mark.integration


async def test_a_service_process_serves_health_and_metrics_and_exits_cleanly_on_sigterm(
    kafka, topics, service_process, make_submission
):
    registry = service_process("registry")
    seconds_to_healthy = registry.wait_healthy()

    await kafka.publish(make_submission("unknown-experiment"), topics=topics)
    [answer] = await kafka.read_events(topics.spaces, 1)
    status, metrics = registry.get("/metrics")
    health = registry.get("/health")
    exit_status = registry.terminate()

    assert isinstance(answer, SpaceRejected)
    assert health == (200, '{"service": "registry", "status": "ok", "kafka": "connected"}')
    assert status == 200
    submissions = f'app_name="registry",broker="kafka",handler="{topics.space_submissions}"'
    assert f"faststream_received_messages_total{{{submissions}}} 1.0" in metrics
    assert f'faststream_received_processed_messages_total{{{submissions},status="acked"}} 1.0' in (
        metrics
    )
    assert f'destination="{topics.spaces}",status="success"' in metrics
    assert 'discospace_service_info{service="registry"} 1.0' in metrics
    assert exit_status == 0, registry.log_tail()
    assert "shut down gracefully" in registry.log_path.read_text()
    assert seconds_to_healthy < 30


def test_a_service_that_cannot_reach_kafka_says_so_in_one_sentence(service_process):
    from discospace.testing.kafka import free_port

    explorer = service_process("explorer", KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{free_port()}")
    assert explorer.process.wait(timeout=60) == 2
    [line] = explorer.log_path.read_text().strip().splitlines()[-1:]
    assert line.startswith("discospace explorer cannot start: Kafka at 127.0.0.1:")
    assert "Traceback" not in explorer.log_path.read_text()


def test_a_bad_setting_is_refused_in_one_sentence(service_process):
    sampler = service_process("sampler", DISCOSPACE_SAMPLER_RETRY_BACKOFF_S="soon")
    assert sampler.process.wait(timeout=60) == 2
    output = sampler.log_path.read_text().strip()
    assert output == (
        "discospace sampler cannot start: setting retry_backoff_s: "
        "Input should be a valid number, unable to parse string as a number"
    )
