"""Structured logs: one JSON object per line, extras as keys, exceptions as text."""

from __future__ import annotations

import json
import logging

from discospace.runtime.logs import JsonFormatter


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
