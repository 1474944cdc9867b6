"""Structured logs: one JSON object per line, extras as keys, exceptions as text; repeated
warnings and errors at a bounded rate."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from discospace.runtime.logs import JsonFormatter, RepeatFilter, configure_logging


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord(
        "discospace.x", logging.WARNING, __file__, 1, "hello %s", ("you",), None
    )
    record.__dict__.update(extra)
    return record


def test_a_log_line_is_one_json_object_with_the_service_and_the_extras():
    line = JsonFormatter("registry").format(_record(topic="t1", offset=4))
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == "hello you"
    assert (parsed["service"], parsed["level"], parsed["logger"]) == (
        "registry",
        "WARNING",
        "discospace.x",
    )
    assert (parsed["topic"], parsed["offset"]) == ("t1", 4)


def test_an_exception_is_kept_inside_the_line():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = _record()
        record.exc_info = sys.exc_info()
    parsed = json.loads(JsonFormatter("registry").format(record))
    assert "ValueError: boom" in parsed["exception"]


@pytest.fixture
def lines() -> Iterator[tuple[logging.Logger, io.StringIO, RepeatFilter]]:
    """A logger writing JSON lines into a buffer through a handler with a RepeatFilter."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(JsonFormatter("registry"))
    repeats = RepeatFilter(interval_s=60.0)
    repeats.install(handler)
    logger = logging.getLogger("aiokafka.test-repeats")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    yield logger, buffer, repeats
    logger.removeHandler(handler)
    logger.propagate = True
    logger.setLevel(logging.NOTSET)


def _written(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def _outage_burst(logger: logging.Logger, count: int = 10_000) -> None:
    for n in range(count):
        logger.error("Unable connect to node with id %s: %s", n % 3, "Connect call failed")


def test_ten_thousand_identical_errors_in_a_burst_write_one_line(lines):
    logger, buffer, _ = lines

    _outage_burst(logger)

    [line] = _written(buffer)
    assert line["message"] == "Unable connect to node with id 0: Connect call failed"


def test_a_different_message_still_gets_through_a_burst(lines):
    logger, buffer, _ = lines

    _outage_burst(logger, 5_000)
    logger.error("Unable to update metadata from [%s]", 1)
    logger.warning("Unable connect to node with id %s: %s", 1, "warning, not error")
    _outage_burst(logger, 5_000)

    assert [line["message"] for line in _written(buffer)] == [
        "Unable connect to node with id 0: Connect call failed",
        "Unable to update metadata from [1]",
        "Unable connect to node with id 1: warning, not error",
    ]


def test_after_the_interval_the_next_one_is_written_saying_how_many_were_left_out(lines):
    logger, buffer, repeats = lines
    repeats.interval_s = 1.0

    _outage_burst(logger, 300)
    time.sleep(1.1)
    _outage_burst(logger, 1)

    first, second = _written(buffer)
    assert second["repeated"] == 299
    assert second["message"] == (
        "Unable connect to node with id 0: Connect call failed "
        "[299 more like this in the last 1 s were not written]"
    )
    assert "repeated" not in first


def test_a_kind_that_stopped_repeating_has_its_count_written_with_the_next_record(lines):
    logger, buffer, repeats = lines
    repeats.interval_s = 1.0

    _outage_burst(logger, 300)
    time.sleep(1.1)
    logger.info("broker reached again")

    _, count, info = _written(buffer)
    assert count["repeated"] == 299
    assert count["message"].startswith("299 more like this in the last 1 s were not written: ")
    assert count["message"].endswith("Unable connect to node with id %s: %s")
    assert (count["level"], count["logger"]) == ("ERROR", "aiokafka.test-repeats")
    assert info["message"] == "broker reached again"


def test_flush_writes_every_count_still_held_and_only_once(lines):
    logger, buffer, repeats = lines

    _outage_burst(logger, 300)
    logger.error("Unable to update metadata from [%s]", 1)
    repeats.flush()
    repeats.flush()

    written = _written(buffer)
    assert [line.get("repeated") for line in written] == [None, None, 299]
    assert written[2]["message"].endswith("Unable connect to node with id %s: %s")


def test_info_lines_are_never_held_back(lines):
    logger, buffer, _ = lines

    for n in range(100):
        logger.info("handled message %s", n)

    assert len(_written(buffer)) == 100


def test_the_same_message_with_a_new_kind_of_exception_gets_through(lines):
    logger, buffer, _ = lines

    for error in (ValueError("a"), ValueError("b"), KeyError("c")):
        try:
            raise error
        except Exception:
            logger.exception("handler failed; the message will be delivered again")

    assert [line["exception"].splitlines()[-1] for line in _written(buffer)] == [
        "ValueError: a",
        "KeyError: 'c'",
    ]


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root, aiokafka = logging.getLogger(), logging.getLogger("aiokafka")
    handlers, level, aiokafka_level = root.handlers[:], root.level, aiokafka.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    aiokafka.setLevel(aiokafka_level)


def test_the_services_logging_bounds_aiokafka_and_our_own_repeated_errors(capsys, restored_logging):
    configure_logging("registry", "INFO", repeat_interval_s=10.0)

    _outage_burst(logging.getLogger("aiokafka"), 10_000)
    for _ in range(10_000):
        logging.getLogger("discospace.runtime.lag").warning("consumer lag not measured")

    written = [json.loads(line)["logger"] for line in capsys.readouterr().err.splitlines()]
    assert written == ["aiokafka", "discospace.runtime.lag"]


def test_a_service_process_writes_the_counts_still_held_when_it_exits():
    program = (
        "import logging\n"
        "from discospace.runtime.logs import configure_logging\n"
        "configure_logging('registry', 'INFO', repeat_interval_s=60.0)\n"
        "for n in range(500):\n"
        "    logging.getLogger('aiokafka').error('Unable connect to node with id %s', n)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )

    written = [json.loads(line) for line in done.stderr.splitlines()]
    assert [line.get("repeated") for line in written] == [None, 499]
    assert written[1]["message"].startswith("499 more like this in the last 0 s were not written")
