"""A worker process on the real broker meets each kind of plugin fault in turn (crash, hang,
memory, garbage), each followed by a normal request: every request is answered once, with the
reason, the next one is measured normally, nothing is dead-lettered, and the worker lives on.
Once with an in-process plugin, once with an isolated one."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from discospace.events import (
    Event,
    MeasurementCompleted,
    MeasurementFailed,
    MeasurementRequested,
    MeasurementStarted,
)

pytestmark = pytest.mark.integration

POOL = "p1"
FAULTY = "actuator 'faulty'"
CHILD = "actuator 'child-test'"

Expected = tuple[bool | None, str]
"""(retryable, reason) of a failure, or (None, invalid reason) of an invalid result."""


def _died(how: str) -> str:
    return f"the measurement process died without a result ({how})"


IN_PROCESS: dict[str, Expected] = {
    "raise": (False, f"{FAULTY} raised RuntimeError: driver crashed"),
    "exit": (False, f"{FAULTY} raised SystemExit: 3"),
    "memory": (True, "the worker ran out of memory measuring it (MemoryError)"),
    "hang": (True, "timed out after 2sec"),
    "stubborn": (True, "timed out after 2sec"),
    "block": (True, "timed out after 2sec"),
    "busy": (True, "timed out after 2sec"),
    "garbage:nan": (
        False,
        f"{FAULTY} returned a value for 'value' that is not a finite number (nan)",
    ),
    "garbage:missing-target": (
        False,
        f"{FAULTY} returned no value for target 'note' of experiment 'probe'",
    ),
    "garbage:not-an-outcome": (False, f"{FAULTY} returned dict, not an outcome"),
    "garbage:oversize": (False, f"{FAULTY} returned a result of "),
}

ISOLATED: dict[str, Expected] = {
    "raise": (False, f"{CHILD} raised ValueError: cannot behave on attempt 1"),
    "exit": (True, _died("exit status 3")),
    "segfault": (True, _died("killed by signal SIGSEGV")),
    "killed": (True, _died("killed by signal SIGKILL")),
    "hang": (True, "timed out after 4sec"),
    "allocate": (None, "out of memory: the measurement exceeded its memory limit of 300 MiB"),
    "garbage:lone-surrogate": (
        False,
        f"{CHILD} returned a value for 'pid' that is not UTF-8 text (a lone surrogate)",
    ),
    "garbage:oversize": (False, f"{CHILD} returned a result of "),
    "unpicklable": (
        False,
        f"{CHILD} returned a result that cannot be sent back from its process (",
    ),
}


def _results(events: list[Event]) -> dict[str, Event]:
    return {
        e.request_id: e for e in events if isinstance(e, MeasurementCompleted | MeasurementFailed)
    }


def _check(result: Event, expected: Expected) -> None:
    retryable, reason = expected
    if retryable is None:
        assert isinstance(result, MeasurementCompleted), result
        assert (result.is_valid, result.invalid_reason) == (False, reason)
        return
    assert isinstance(result, MeasurementFailed), result
    assert result.retryable is retryable, result.reason
    assert result.reason.startswith(reason), result.reason


async def _meet_each_fault(
    kafka,
    topics,
    process,
    ask: Callable[[str, int], MeasurementRequested],
    normal: str,
    faults: dict[str, Expected],
) -> None:
    """Publish each fault followed by a normal request, then one more normal request once all
    are answered; check every answer, the dead letters and the worker."""
    await kafka.wait_for(topics.actuators, lambda events: len(events) >= 1, timeout_s=90)
    pairs = [(ask(fault, n), ask(normal, n)) for n, fault in enumerate(faults)]
    await kafka.publish(*[request for pair in pairs for request in pair], topics=topics)
    events = await kafka.wait_for(
        topics.measurements, lambda e: len(_results(e)) >= 2 * len(pairs), timeout_s=180
    )
    last = ask(normal, len(pairs))
    await kafka.publish(last, topics=topics)
    events = await kafka.wait_for(
        topics.measurements, lambda e: last.request_id in _results(e), timeout_s=60
    )

    results = _results(events)
    for (fault_request, normal_request), expected in zip(pairs, faults.values(), strict=True):
        _check(results[fault_request.request_id], expected)
        after = results[normal_request.request_id]
        assert isinstance(after, MeasurementCompleted), after
        assert after.is_valid, "the worker did not measure normally after the fault"
    assert isinstance(results[last.request_id], MeasurementCompleted)
    assert results[last.request_id].is_valid
    starts = [e.request_id for e in events if isinstance(e, MeasurementStarted)]
    assert sorted(starts) == sorted(results), "a request was started twice, or not at all"
    assert len(results) == 2 * len(pairs) + 1
    assert {e.worker_id for e in results.values()} == {"survivor"}
    assert process.poll() is None, "the worker died"
    assert await kafka.read_all(topics.dead_letter) == []


async def test_an_in_process_plugins_worker_meets_each_fault_and_measures_on(
    kafka, topics, make_request, worker_process
):
    process = worker_process(
        "survivor",
        DISCOSPACE_ACTUATOR_ACTUATOR="isolation_plugins:FaultyPlugin",
        DISCOSPACE_ACTUATOR_TIMEOUT="2sec",
    )

    def ask(fault: str, n: int) -> MeasurementRequested:
        return make_request(
            {"fault": fault, "n": n}, pool=POOL, actuator="faulty", experiment="probe"
        )

    await _meet_each_fault(kafka, topics, process, ask, "none", IN_PROCESS)


async def test_an_isolated_plugins_worker_meets_each_fault_and_measures_on(
    kafka, topics, make_request, worker_process
):
    process = worker_process(
        "survivor",
        DISCOSPACE_ACTUATOR_ACTUATOR="isolation_plugins:ChildPlugin",
        DISCOSPACE_ACTUATOR_PARAMETERS=json.dumps({"allocate_mb": 512}),
        DISCOSPACE_ACTUATOR_TIMEOUT="4sec",
        DISCOSPACE_ACTUATOR_MEMORY_LIMIT_MB="300",
    )

    def ask(behaviour: str, n: int) -> MeasurementRequested:
        return make_request(
            {"behaviour": behaviour, "n": n}, pool=POOL, actuator="child-test", experiment="behave"
        )

    await _meet_each_fault(kafka, topics, process, ask, "answer", ISOLATED)
