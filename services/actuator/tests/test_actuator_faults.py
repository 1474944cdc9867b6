"""A plugin that crashes, hangs, runs out of memory or returns garbage: every measurement is
answered (retried, or failed for good with the reason), and the same worker measures the next
request normally. Both kinds of plugin: in process (`FaultyPlugin`, an async `measure` on the
worker's event loop) and isolated (`ChildPlugin`, a child process per measurement)."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from isolation_plugins import (
    GARBAGE,
    ChildParameters,
    ChildPlugin,
    FaultyParameters,
    FaultyPlugin,
)

from discospace.actuator.cancellation import IDLE_KEEP_S, STALL_SIGNAL, STALLS, Stalled, Watch
from discospace.actuator.handlers import ActuatorDeps, on_measurement_requested
from discospace.actuator.isolation import ChildProcessRunner
from discospace.actuator.settings import ActuatorSettings
from discospace.actuator.worker import Worker
from discospace.core import Time
from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementStarted,
    encode_within,
)
from discospace.testing.waiting import eventually

CHILD = "actuator 'child-test'"
FAULTY = "actuator 'faulty'"


def _faulty(clock, timeout: str | None = "1sec", stop_grace_s: float = 0.5, **parameters):
    plugin = FaultyPlugin(FaultyParameters(**parameters))
    limit = None if timeout is None else Time.parse(timeout)
    return Worker(plugin, "w0", clock, timeout=limit, stop_grace_s=stop_grace_s)


def _isolated(clock, timeout: str = "5sec", memory_limit_mb: int | None = None, **parameters):
    plugin = ChildPlugin(ChildParameters(**parameters))
    runner = ChildProcessRunner(plugin, memory_limit_mb)
    return Worker(plugin, "w0", clock, runner=runner, timeout=Time.parse(timeout))


def _probe(make_request, fault: str):
    return make_request({"fault": fault}, actuator="faulty", experiment="probe")


def _behave(make_request, behaviour: str):
    return make_request({"behaviour": behaviour}, actuator="child-test", experiment="behave")


async def _answers(worker, request):
    return [event async for event in worker.handle(request)]


async def _fault_then_normal(worker, fault, normal):
    """What the fault gave (after its `MeasurementStarted`), then what the next request gave."""
    started, result = await _answers(worker, fault)
    assert isinstance(started, MeasurementStarted)
    _, after = await _answers(worker, normal)
    assert isinstance(after, MeasurementCompleted), after
    assert after.is_valid, "the worker did not measure normally after the fault"
    return result


def _failed(event, retryable: bool) -> str:
    assert isinstance(event, MeasurementFailed), event
    assert event.retryable is retryable
    return event.reason


# -- in process --------------------------------------------------------------------------------


IN_PROCESS = [
    ("raise", False, f"{FAULTY} raised RuntimeError: driver crashed"),
    # not UTF-8: the failure event refused the reason, and the request was never answered
    ("raise-undecodable", False, f"{FAULTY} raised RuntimeError: corrupt shard caf\\udce9"),
    ("transient-undecodable", True, "mount caf\\udce9 missing"),
    ("invalid-undecodable", None, "no shard caf\\udce9"),
    (
        "raise-validation",
        False,
        f"{FAULTY} raised ValidationError: ValidMeasurement: values.value: Input should be a "
        "valid boolean; Input should be a valid integer; Input should be a valid number; "
        "Input should be a valid string",
    ),
    ("exit", False, f"{FAULTY} raised SystemExit: 3"),
    ("memory", True, "the worker ran out of memory measuring it (MemoryError)"),
    ("hang", True, "timed out after 1sec"),
    ("stubborn", True, "timed out after 1sec"),
    ("block", True, "timed out after 1sec"),
    ("busy", True, "timed out after 1sec"),
]


@pytest.mark.parametrize(("fault", "retryable", "reason"), IN_PROCESS)
async def test_an_in_process_plugin_that_crashes_or_hangs_is_answered_and_the_worker_goes_on(
    clock, make_request, fault, retryable: bool | None, reason
):
    worker = _faulty(clock)
    begun = time.monotonic()

    result = await _fault_then_normal(
        worker, _probe(make_request, fault), _probe(make_request, "none")
    )

    if retryable is None:
        assert isinstance(result, MeasurementCompleted), result
        assert not result.is_valid
        assert result.invalid_reason == reason
    else:
        assert _failed(result, retryable) == reason
    assert time.monotonic() - begun < 6, "the fault held the worker past its timeout"


async def test_a_plugin_holding_the_event_loop_is_stopped_at_the_block_limit_whatever_its_timeout(
    clock, make_request, monkeypatch
):
    monkeypatch.setattr(STALLS, "block_limit_s", 1.0)
    worker = _faulty(clock, timeout="1h")
    begun = time.monotonic()

    result = await _fault_then_normal(
        worker, _probe(make_request, "block"), _probe(make_request, "none")
    )

    assert _failed(result, False) == (
        f"{FAULTY} held the worker's event loop for over 1 s (an in-process plugin must await, "
        "not block: make it isolated)"
    )
    assert time.monotonic() - begun < 6
    assert worker.metrics.calls_with("faulty", "error") == 1


async def test_a_plugin_that_holds_the_loop_briefly_within_its_time_is_not_interrupted(
    clock, make_request
):
    worker = _faulty(clock, timeout="10sec", block_s=0.6)

    _, completed = await _answers(worker, _probe(make_request, "block"))

    assert isinstance(completed, MeasurementCompleted)
    assert completed.is_valid


async def test_one_guard_thread_watches_measurement_after_measurement_then_ends(monkeypatch):
    await eventually(lambda: not STALLS.watching, IDLE_KEEP_S + 2, "a thread left from before")
    monkeypatch.setattr(STALLS, "idle_keep_s", 0.5)
    with STALLS.watch(None):
        first = STALLS._thread
    for _ in range(3):
        await asyncio.sleep(0.05)
        with STALLS.watch(None):
            assert STALLS._thread is first, "a thread started per measurement"
    assert first is not None

    await eventually(lambda: not STALLS.watching, 5, "the idle guard's thread ending")
    first.join(timeout=2)
    assert not first.is_alive()


async def test_a_measurement_holding_the_loop_after_an_idle_spell_is_still_stopped(monkeypatch):
    monkeypatch.setattr(STALLS, "block_limit_s", 0.5)
    monkeypatch.setattr(STALLS, "idle_keep_s", 10.0)
    with STALLS.watch(None):
        pass
    await asyncio.sleep(0.3)  # nothing watched: the thread waits for the next measurement
    assert STALLS.watching

    def hold_the_loop(watch: Watch) -> None:
        watch.frame = sys._getframe()  # the measurement runs here, holding the loop
        while time.monotonic() - began < 5:
            pass

    began = time.monotonic()
    with STALLS.watch(None) as watch, pytest.raises(Stalled, match="held the event loop"):
        hold_the_loop(watch)
    assert time.monotonic() - began < 3


async def test_the_stall_signal_does_nothing_where_no_watched_measurement_runs():
    def elsewhere():
        return sys._getframe()

    with STALLS.watch(time.monotonic() - 1) as watch:
        watch.frame = elsewhere()  # overdue, but not on any stack the signal interrupts
        signal.pthread_kill(threading.main_thread().ident or 0, STALL_SIGNAL)
        await asyncio.sleep(0.3)

    assert signal.getsignal(STALL_SIGNAL) == STALLS._interrupt


async def test_an_error_message_of_any_size_becomes_a_reason_of_at_most_500_characters(
    clock, make_request
):
    worker = _faulty(clock)

    _, failed = await _answers(worker, _probe(make_request, "raise-huge"))
    _, invalid = await _answers(worker, _probe(make_request, "long-reason"))

    assert len(_failed(failed, False)) == 500
    assert failed.reason.startswith(f"{FAULTY} raised RuntimeError: xxx")
    assert failed.reason.endswith("…")
    assert isinstance(invalid, MeasurementCompleted)
    assert (invalid.is_valid, len(invalid.invalid_reason or "")) == (False, 500)


# -- isolated ----------------------------------------------------------------------------------


def _died(how: str) -> str:
    return f"the measurement process died without a result ({how})"


ISOLATED = [
    ("raise", False, f"{CHILD} raised ValueError: cannot behave on attempt 1"),
    ("raise-undecodable", False, f"{CHILD} raised ValueError: corrupt shard caf\\udce9"),
    ("exit", True, _died("exit status 3")),
    # raised, as in process: sys.exit(2) of a CLI refusing its arguments would never succeed
    ("sysexit", False, f"{CHILD} raised SystemExit: 4"),
    ("segfault", True, _died("killed by signal SIGSEGV")),
    ("killed", True, _died("killed by signal SIGKILL")),
    ("hang", True, "timed out after 5sec"),
]


@pytest.mark.parametrize(("behaviour", "retryable", "reason"), ISOLATED)
async def test_an_isolated_plugin_that_crashes_or_hangs_is_answered_and_the_worker_goes_on(
    clock, make_request, behaviour, retryable, reason
):
    worker = _isolated(clock)

    result = await _fault_then_normal(
        worker, _behave(make_request, behaviour), _behave(make_request, "answer")
    )

    assert _failed(result, retryable) == reason


async def test_a_worker_that_cannot_start_a_measurements_process_fails_it_for_now(
    clock, make_request
):
    """Too many open files (the worker's, not the plugin's) was blamed on the plugin and
    never retried; and the fork server, whose connection broke halfway, died: every later
    measurement of the worker failed ("Connection refused") until it was restarted."""
    worker = _isolated(clock)
    await worker.warm_up()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 1, hard))
    try:
        _, result = await _answers(worker, _behave(make_request, "answer"))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    assert _failed(result, retryable=True) == (
        "the worker could not start the measurement's process (OSError: [Errno 24] Too many "
        "open files)"
    )
    for _ in range(2):
        _, after = await _answers(worker, _behave(make_request, "answer"))
        assert isinstance(after, MeasurementCompleted), after


async def test_an_isolated_plugin_over_its_memory_limit_is_invalid_naming_the_limit(
    clock, make_request
):
    worker = _isolated(clock, memory_limit_mb=300, allocate_mb=512)

    result = await _fault_then_normal(
        worker, _behave(make_request, "allocate"), _behave(make_request, "answer")
    )

    assert isinstance(result, MeasurementCompleted)
    assert (result.is_valid, result.invalid_reason) == (
        False,
        "out of memory: the measurement exceeded its memory limit of 300 MiB",
    )


async def test_a_child_is_the_kernels_first_choice_when_memory_runs_out(clock, make_request):
    worker = _isolated(clock)

    _, completed = await _answers(worker, _behave(make_request, "oom_score"))

    assert isinstance(completed, MeasurementCompleted)
    assert completed.values["megabytes"] == 1000, "the child's oom_score_adj"


async def test_a_result_that_cannot_come_back_from_the_child_fails_for_good_saying_why(
    clock, make_request
):
    worker = _isolated(clock, timeout="60sec")

    unpicklable = await _fault_then_normal(
        worker, _behave(make_request, "unpicklable"), _behave(make_request, "answer")
    )
    huge = await _fault_then_normal(
        worker, _behave(make_request, "huge-result"), _behave(make_request, "answer")
    )

    assert _failed(unpicklable, False).startswith(
        f"{CHILD} returned a result that cannot be sent back from its process ("
    )
    assert _failed(huge, False) == (
        f"{CHILD} returned a result of 80 MiB from its process, over the 64 MiB one may send back"
    )


# -- garbage, both kinds -------------------------------------------------------------------------

KINDS = "a string, a whole number, a real number or a boolean"


def _garbage_reason(kind: str, actuator: str, experiment: str, targets: tuple[str, str]) -> str:
    first, second = targets
    returned = {
        "not-an-outcome": "dict, not an outcome",
        "nothing": "NoneType, not an outcome",
        "missing-target": f"no value for target '{second}' of experiment '{experiment}'",
        "undeclared-target": (
            f"a value for 'extra', which experiment '{experiment}' does not declare as a target"
        ),
        "nan": f"a value for '{first}' that is not a finite number (nan)",
        "infinite": f"a value for '{first}' that is not a finite number (-inf)",
        "list-value": f"a value for '{first}' of type list, not {KINDS}",
        "object-value": f"a value for '{first}' of type object, not {KINDS}",
        "huge-integer": f"a value for '{first}' of 100 bits, outside 64-bit integers",
        "lone-surrogate": f"a value for '{first}' that is not UTF-8 text (a lone surrogate)",
        "oversize": "a result of ",
        "invalid-without-reason": "an invalid measurement without a reason",
        "transient-without-reason": "a transient failure without a reason",
        "negative-uncertainty": f"an uncertainty for '{first}' that is not a finite number >= 0",
        "huge-uncertainty": f"an uncertainty for '{first}' that is not a finite number >= 0",
        "array-uncertainty": "an uncertainty of type ndarray, not a mapping",
    }[kind]
    return f"{actuator} returned {returned}"


@pytest.mark.parametrize("kind", GARBAGE)
async def test_garbage_from_an_in_process_plugin_fails_for_good_saying_what_was_wrong(
    clock, make_request, kind
):
    worker = _faulty(clock)

    result = await _fault_then_normal(
        worker, _probe(make_request, f"garbage:{kind}"), _probe(make_request, "none")
    )

    reason = _failed(result, False)
    expected = _garbage_reason(kind, FAULTY, "probe", ("value", "note"))
    if kind == "oversize":
        assert reason.startswith(expected)
        assert reason.endswith("bytes as a message, over the 1048576-byte message limit")
    else:
        assert reason == expected
    assert worker.metrics.calls_with("faulty", "error") == 1


@pytest.mark.parametrize("kind", GARBAGE)
async def test_garbage_from_an_isolated_plugin_fails_for_good_saying_what_was_wrong(
    clock, make_request, kind
):
    worker = _isolated(clock, timeout="30sec")

    result = await _fault_then_normal(
        worker, _behave(make_request, f"garbage:{kind}"), _behave(make_request, "answer")
    )

    reason = _failed(result, False)
    expected = _garbage_reason(kind, CHILD, "behave", ("pid", "megabytes"))
    if kind == "oversize":
        assert reason.startswith(expected)
    else:
        assert reason == expected


async def test_values_of_subclassed_types_are_carried_as_plain_values(clock, make_request):
    worker = _faulty(clock)

    _, completed = await _answers(worker, _probe(make_request, "numpy"))

    assert isinstance(completed, MeasurementCompleted)
    assert completed.values == {"value": 1.5, "note": "fine after numpy"}
    assert type(completed.values["value"]) is float


# -- the handler: a result the publisher refuses --------------------------------------------------


@dataclass
class _Publisher:
    """Publishes into a list, refusing what would not fit `limit` bytes, as the real one."""

    limit: int
    published: list[Event] = field(default_factory=list)

    async def __call__(self, event: Event) -> None:
        encode_within(event, self.limit)
        self.published.append(event)


async def _announce(event: Any) -> None: ...


async def test_a_result_over_the_publishers_limit_is_replaced_by_a_failure_saying_so(
    clock, make_request
):
    plugin = FaultyPlugin()
    worker = Worker(plugin, "w0", clock)
    publisher = _Publisher(limit=4000)
    deps = ActuatorDeps(ActuatorSettings(pool="p1"), plugin, worker, publisher, _announce)
    request = _probe(make_request, "long-note")

    await on_measurement_requested(request, deps)

    started, failed = publisher.published
    assert isinstance(started, MeasurementStarted)
    reason = _failed(failed, False)
    assert reason.startswith(f"{FAULTY} returned a result of ")
    assert reason.endswith("bytes as a message, over the 4000-byte message limit")
    assert failed.request_id == request.request_id
