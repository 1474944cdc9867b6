"""The garbage collector of a service process: its young threshold set, start-up frozen."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
import weakref
from collections.abc import Iterator

import pytest

from discospace.runtime import runner
from discospace.runtime.collector import tune_collector


@pytest.fixture
def python_collector() -> Iterator[None]:
    """Python's collector as it was, after the test (thresholds, nothing frozen)."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_tuning_sets_the_young_threshold_keeps_the_older_ones_and_freezes_what_exists(
    python_collector: None,
) -> None:
    _, middle, old = gc.get_threshold()
    kept = _Node()
    tracked = weakref.ref(kept)

    tune_collector(20_000)

    assert gc.get_threshold() == (20_000, middle, old)
    assert gc.get_freeze_count() > 0
    assert not any(obj is kept for obj in gc.get_objects())  # frozen: no generation holds it
    assert tracked() is kept


def test_cyclic_garbage_is_still_collected_once_enough_is_allocated(
    python_collector: None,
) -> None:
    tune_collector(1_000)
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    del first, second

    keep = [[] for _ in range(5_000)]  # tracked allocations, no explicit collect

    assert gone() is None
    assert len(keep) == 5_000


def test_a_threshold_below_one_is_refused_with_a_sentence(python_collector: None) -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(ValueError, match="at least 1, not 0"):
        tune_collector(0)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


SERVICE_REPORTING_ITS_COLLECTOR = """
import gc, sys
from discospace.runtime import ServiceSettings, create_service, runner
from discospace.runtime import service as service_module

async def topics_exist(*args, **kwargs):
    return None

service_module.provision_topics = topics_exist
runner._check_kafka = lambda service: None
service = create_service(
    ServiceSettings(http_port=int(sys.argv[1])), description="A service that reports its gc."
)

async def report():
    print("threshold", gc.get_threshold()[0], "frozen", gc.get_freeze_count(), flush=True)
    raise ValueError("reported")

service.on_startup(report)
runner.run(service)
"""


@pytest.mark.timeout(60)
def test_a_service_process_runs_with_its_settings_young_threshold_and_start_up_frozen() -> None:
    environment = {**os.environ, "DISCOSPACE_SERVICE_GC_YOUNG_THRESHOLD": "12345"}
    ended = subprocess.run(
        [sys.executable, "-c", SERVICE_REPORTING_ITS_COLLECTOR, str(_free_port())],
        capture_output=True,
        text=True,
        timeout=50,
        env=environment,
    )

    assert ended.returncode == runner.EXIT_BAD_START, ended.stderr[-2000:]
    [report] = [line for line in ended.stdout.splitlines() if line.startswith("threshold")]
    _, threshold, _, frozen = report.split()
    assert int(threshold) == 12345
    assert int(frozen) > 10_000  # the modules and the app built before serving


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
