"""An isolated plugin measures in a child process: whatever the child does (answer, crash,
hang, raise, run out of memory), the worker answers the request and goes on measuring."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from isolation_plugins import ChildParameters, ChildPlugin

from discospace.actuator.isolation import ChildProcessRunner
from discospace.actuator.worker import Worker
from discospace.core import Time
from discospace.events import MeasurementCompleted, MeasurementFailed, MeasurementStarted

TESTS = Path(__file__).resolve().parent


def _worker(clock, timeout="30sec", memory_limit_mb=None, **parameters) -> Worker:
    plugin = ChildPlugin(ChildParameters(**parameters))
    return Worker(
        plugin,
        "w0",
        clock,
        runner=ChildProcessRunner(plugin, memory_limit_mb),
        timeout=Time.parse(timeout),
    )


def _ask(make_request, behaviour: str, **fields):
    return make_request({"behaviour": behaviour}, actuator="child-test", experiment="behave",
                        **fields)  # fmt: skip


async def _answers(worker, request):
    return [event async for event in worker.handle(request)]


async def _result(worker, request):
    *_, last = await _answers(worker, request)
    return last


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _pid_of(pid_dir: Path, request_id: str, timeout_s: float = 20.0) -> int:
    path = pid_dir / request_id
    deadline = time.monotonic() + timeout_s
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, "the child never started"
        await asyncio.sleep(0.02)
    return int(path.read_text())


async def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def test_an_isolated_plugin_measures_in_a_child_process_and_its_values_come_back(
    clock, make_request
):
    worker = _worker(clock)

    started, completed = await _answers(worker, _ask(make_request, "answer"))

    assert isinstance(started, MeasurementStarted)
    assert isinstance(completed, MeasurementCompleted)
    assert completed.is_valid
    assert completed.values["pid"] != os.getpid()
    assert worker.metrics.calls_with("child-test", "valid") == 1


async def test_a_child_that_exits_without_a_result_fails_retryably_and_the_worker_measures_on(
    clock, make_request
):
    worker = _worker(clock)

    failed = await _result(worker, _ask(make_request, "exit"))
    after = await _result(worker, _ask(make_request, "answer"))

    assert isinstance(failed, MeasurementFailed)
    assert failed.retryable
    assert failed.reason == "the measurement process died without a result (exit status 3)"
    assert isinstance(after, MeasurementCompleted)
    assert after.is_valid
    assert worker.metrics.calls_with("child-test", "crashed") == 1


async def test_a_segfault_in_the_child_fails_retryably_naming_the_signal(clock, make_request):
    worker = _worker(clock)

    failed = await _result(worker, _ask(make_request, "segfault"))

    assert isinstance(failed, MeasurementFailed)
    assert failed.retryable
    assert failed.reason == (
        "the measurement process died without a result (killed by signal SIGSEGV)"
    )


async def test_a_hanging_child_is_killed_at_the_timeout_and_fails_retryably(
    clock, make_request, tmp_path
):
    worker = _worker(clock, timeout="1sec", pid_dir=str(tmp_path))
    request = _ask(make_request, "hang")
    begun = time.monotonic()

    measuring = asyncio.ensure_future(_result(worker, request))
    pid = await _pid_of(tmp_path, request.request_id)
    failed = await measuring

    assert isinstance(failed, MeasurementFailed)
    assert (failed.retryable, failed.reason) == (True, "timed out after 1sec")
    assert time.monotonic() - begun < 10
    assert await _gone(pid), "the hanging child still runs"
    assert worker.metrics.calls_with("child-test", "timeout") == 1


async def test_what_a_child_started_dies_with_it_at_the_timeout(clock, make_request, tmp_path):
    worker = _worker(clock, timeout="1sec", pid_dir=str(tmp_path))
    request = _ask(make_request, "spawn-hang")

    measuring = asyncio.ensure_future(_result(worker, request))
    helper = await _pid_of(tmp_path, f"{request.request_id}.helper")
    failed = await measuring

    assert (failed.retryable, failed.reason) == (True, "timed out after 1sec")
    assert await _gone(helper), "the process the child started still runs"


async def test_what_a_child_left_behind_dies_when_its_measurement_ends(
    clock, make_request, tmp_path
):
    worker = _worker(clock, pid_dir=str(tmp_path))
    request = _ask(make_request, "spawn-answer")

    completed = await _result(worker, request)
    helper = await _pid_of(tmp_path, f"{request.request_id}.helper")

    assert isinstance(completed, MeasurementCompleted)
    assert await _gone(helper), "the process the child left behind still runs"


async def test_a_child_that_dies_while_its_fork_holds_the_pipe_is_seen_at_once(
    clock, make_request, tmp_path
):
    worker = _worker(clock, timeout="60sec", pid_dir=str(tmp_path))
    request = _ask(make_request, "fork-exit")
    begun = time.monotonic()

    failed = await _result(worker, request)
    helper = await _pid_of(tmp_path, f"{request.request_id}.helper")

    assert isinstance(failed, MeasurementFailed)
    assert failed.reason == "the measurement process died without a result (exit status 3)"
    assert time.monotonic() - begun < 30
    assert await _gone(helper), "the process the child forked still runs"


async def test_a_child_over_its_memory_limit_gives_an_invalid_out_of_memory_result(
    clock, make_request
):
    limited = _worker(clock, memory_limit_mb=300, allocate_mb=512)
    unlimited = _worker(clock, allocate_mb=512)

    over = await _result(limited, _ask(make_request, "allocate"))
    fits = await _result(unlimited, _ask(make_request, "allocate"))

    assert isinstance(over, MeasurementCompleted)
    assert (over.is_valid, over.invalid_reason) == (
        False,
        "out of memory: the measurement exceeded its memory limit of 300 MiB",
    )
    assert isinstance(fits, MeasurementCompleted)
    assert fits.is_valid
    assert fits.values["megabytes"] == 512


async def test_results_the_plugin_classifies_pass_through_from_the_child(clock, make_request):
    worker = _worker(clock)

    invalid = await _result(worker, _ask(make_request, "invalid"))
    transient = await _result(worker, _ask(make_request, "transient"))

    assert isinstance(invalid, MeasurementCompleted)
    assert (invalid.is_valid, invalid.invalid_reason) == (False, "batch does not fit")
    assert isinstance(transient, MeasurementFailed)
    assert (transient.retryable, transient.reason) == (True, "device busy")


async def test_an_exception_in_the_child_fails_the_measurement_for_good_with_the_error(
    clock, make_request
):
    worker = _worker(clock)

    failed = await _result(worker, _ask(make_request, "raise", attempt=2))

    assert isinstance(failed, MeasurementFailed)
    assert not failed.retryable
    assert failed.reason == "actuator 'child-test' raised ValueError: cannot behave on attempt 2"
    assert worker.metrics.calls_with("child-test", "error") == 1


async def test_a_base_exception_in_the_child_fails_the_measurement_for_good(clock, make_request):
    """The child died with it (status 1): 'process died', retried as if the host had failed."""
    worker = _worker(clock)

    failed = await _result(worker, _ask(make_request, "raise-base"))

    assert isinstance(failed, MeasurementFailed)
    assert (failed.retryable, failed.reason) == (
        False,
        "actuator 'child-test' raised GeneratorExit: the SDK aborted",
    )


async def test_an_operation_stopped_by_a_rule_kills_its_running_child_and_fails_it_for_good(
    clock, make_request, make_completion, tmp_path
):
    worker = _worker(clock, pid_dir=str(tmp_path))
    request = _ask(make_request, "hang", operation="op-9")

    measuring = asyncio.ensure_future(_answers(worker, request))
    pid = await _pid_of(tmp_path, request.request_id)
    worker.operations.record(make_completion("op-9", stop_reason="max_duration"))
    started, failed = await asyncio.wait_for(measuring, 10)

    assert isinstance(started, MeasurementStarted)
    assert isinstance(failed, MeasurementFailed)
    assert (failed.retryable, failed.reason) == (False, "operation completed")
    assert await _gone(pid), "the stopped measurement's child still runs"
    assert worker.metrics.calls_with("child-test", "cancelled") == 1


async def test_cancelling_the_operation_leaves_its_running_child_to_finish(
    clock, make_request, make_cancel, tmp_path
):
    worker = _worker(clock, pid_dir=str(tmp_path))
    request = _ask(make_request, "hang", operation="op-9")

    measuring = asyncio.ensure_future(_answers(worker, request))
    pid = await _pid_of(tmp_path, request.request_id)
    worker.operations.record(make_cancel("op-9"))
    await asyncio.sleep(0.5)

    assert not measuring.done(), "the cancel stopped a measurement already running"
    assert not await _gone(pid, 0.2), "the cancel killed the running child"
    measuring.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await measuring
    assert await _gone(pid)


async def test_a_worker_stopped_mid_measurement_kills_its_child_and_publishes_no_result(
    clock, make_request, tmp_path
):
    worker = _worker(clock, pid_dir=str(tmp_path))
    request = _ask(make_request, "hang")
    seen = []

    async def consume():
        async for event in worker.handle(request):
            seen.append(event)

    task = asyncio.ensure_future(consume())
    pid = await _pid_of(tmp_path, request.request_id)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert [type(event) for event in seen] == [MeasurementStarted]
    assert await _gone(pid)


async def test_several_children_measure_at_once(clock, make_request):
    worker = _worker(clock, seconds=1.0)
    requests = [
        make_request({"behaviour": "answer", "n": n}, actuator="child-test", experiment="behave")
        for n in range(3)
    ]
    begun = time.monotonic()

    results = await asyncio.gather(*(_result(worker, r) for r in requests))

    assert all(isinstance(r, MeasurementCompleted) and r.is_valid for r in results)
    assert len({r.values["pid"] for r in results}) == 3
    assert time.monotonic() - begun < 2.5, "three 1 s measurements did not overlap"


HOLDER = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from isolation_plugins import ChildParameters, ChildPlugin
from discospace.actuator.isolation import ChildProcessRunner
from discospace.actuator.plugin import MeasurementTask
from discospace.core import Entity, ExperimentCatalog

async def main():
    plugin = ChildPlugin(ChildParameters(pid_dir=sys.argv[2]))
    experiment = ExperimentCatalog(plugin.catalog()).get("child-test", "behave").parameterize()
    await ChildProcessRunner(plugin)(MeasurementTask("held", Entity.of({"behaviour": "hang"}),
                                                     experiment))

if __name__ == "__main__":
    asyncio.run(main())
"""


async def test_a_child_dies_with_its_worker_even_when_the_worker_is_killed(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(TESTS), str(tmp_path)])
    try:
        pid = await _pid_of(tmp_path, "held", timeout_s=60)
        assert _alive(pid)
        holder.send_signal(signal.SIGKILL)
        holder.wait()

        assert await _gone(pid), "the child outlived its killed worker"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
