"""Structured logs: one JSON object per line on stderr, from every logger of the process.

Warnings and errors that repeat are written at a bounded rate (`RepeatFilter`): while the
broker is away, aiokafka alone writes thousands of identical connection errors a second (5,780
lines from one service in a 35 s outage); the first of each kind is written, then at most one
per interval, saying how many like it were left out.
"""

from __future__ import annotations

import atexit
import json
import logging
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

REPEAT_INTERVAL_S = 10.0
MAX_KINDS = 1024
"""Kinds of record remembered by a `RepeatFilter` (the oldest are forgotten first)."""
Kind = tuple[str, int, str, str]
"""(logger, level, message template, exception type)"""

_STANDARD_ATTRIBUTES = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys()
    | {"message", "asctime", "color_message", "taskName"}
)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line; `extra=` fields become top-level keys."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_extra_fields(record))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: value
        for key, value in record.__dict__.items()
        if key not in _STANDARD_ATTRIBUTES and not key.startswith("_")
    }


@dataclass
class _Window:
    """Since when a kind of record is held back, and how many of it were."""

    start_s: float
    left_out: int = 0


class RepeatFilter(logging.Filter):
    """Writes the first warning or error of a kind, then at most one per `interval_s`.

    A kind is the logger, the level, the message template (before its arguments are put in:
    aiokafka's "Unable connect to node with id %s: %s" is one kind whatever the node and error)
    and the exception's type. Within `interval_s` of the record of a kind that was written, the
    others of that kind are left out and counted; the next one written after that says how many
    (`[2979 more like this in the last 10 s were not written]`, and the field `repeated`).
    A kind that stops repeating has its count written as a record of its own as soon as any
    other record passes, and every count still held is written by `flush` (at the process's
    exit, for the filter of `configure_logging`). Records below `level` always pass;
    `interval_s` 0 lets everything pass.

    Install it on a handler with `install(handler)` (what `configure_logging` does), so it sees
    the records of every logger, aiokafka's included, and can write those counts.
    """

    def __init__(
        self,
        interval_s: float = REPEAT_INTERVAL_S,
        level: int = logging.WARNING,
        max_kinds: int = MAX_KINDS,
    ) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.level = level
        self.max_kinds = max_kinds
        self._windows: OrderedDict[Kind, _Window] = OrderedDict()
        self._lock = threading.RLock()
        self._handler: logging.Handler | None = None
        self._looked_s = 0.0

    def install(self, handler: logging.Handler) -> None:
        """Filter `handler`'s records, and write the counts of left-out records through it."""
        handler.addFilter(self)
        self._handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.level or self.interval_s <= 0 or _is_count(record):
            self._write_counts(record.created)
            return True
        with self._lock:
            written = self._admit(record)
        if written:
            self._write_counts(record.created)
        return written

    def _admit(self, record: logging.LogRecord) -> bool:
        kind = _kind_of(record)
        window = self._windows.get(kind)
        if window is not None and record.created - window.start_s < self.interval_s:
            window.left_out += 1
            return False
        if window is not None and window.left_out:
            _say_left_out(record, window.left_out, record.created - window.start_s)
        self._windows[kind] = _Window(record.created)
        self._windows.move_to_end(kind)
        while len(self._windows) > self.max_kinds:
            self._windows.popitem(last=False)
        return True

    def flush(self, now_s: float | None = None) -> None:
        """Write, as records of their own, the counts of every kind with records left out."""
        self._write_held(time.time() if now_s is None else now_s, since_s=0.0)

    def _write_counts(self, now_s: float) -> None:
        """Write, as records of their own, the counts of kinds that stopped repeating."""
        if self._handler is None or now_s - self._looked_s < self.interval_s / 10:
            return
        with self._lock:
            self._looked_s = now_s
        self._write_held(now_s, since_s=self.interval_s)

    def _write_held(self, now_s: float, since_s: float) -> None:
        """Write the counts of the kinds with records left out whose window began `since_s` or
        more before `now_s`, and start their count again."""
        if self._handler is None:
            return
        with self._lock:
            held = [
                (kind, window)
                for kind, window in self._windows.items()
                if window.left_out and now_s - window.start_s >= since_s
            ]
            for kind, window in held:
                self._windows[kind] = _Window(window.start_s)
        for kind, window in held:
            self._handler.handle(_count_record(kind, window, now_s))


def _kind_of(record: logging.LogRecord) -> Kind:
    error = record.exc_info[1] if record.exc_info else None
    return (record.name, record.levelno, str(record.msg), type(error).__name__ if error else "")


def _is_count(record: logging.LogRecord) -> bool:
    return getattr(record, "repeated", None) is not None


def _say_left_out(record: logging.LogRecord, left_out: int, span_s: float) -> None:
    record.msg = f"{record.msg} [{_left_out(left_out, span_s)}]"
    record.repeated = left_out


def _left_out(count: int, span_s: float) -> str:
    return f"{count} more like this in the last {span_s:.0f} s were not written"


def _count_record(kind: Kind, window: _Window, now_s: float) -> logging.LogRecord:
    """A record saying how many records of `kind` were left out since `window` began."""
    name, level, template, error = kind
    like = f"{template} ({error})" if error else template
    message = f"{_left_out(window.left_out, now_s - window.start_s)}: %s"
    record = logging.LogRecord(name, level, __file__, 0, message, (like,), None)
    record.repeated = window.left_out
    return record


_configured: list[tuple[logging.Handler, RepeatFilter]] = []
"""The handler and filter of the last `configure_logging`: the filter's held counts are written
at exit while that handler is still the root logger's."""


def _flush_configured() -> None:
    for handler, repeats in _configured:
        if handler in logging.getLogger().handlers:
            repeats.flush()


def configure_logging(
    service: str, level: str = "INFO", repeat_interval_s: float = REPEAT_INTERVAL_S
) -> None:
    """Send every logger's records, as JSON lines, to stderr, repeated warnings and errors at a
    bounded rate (`RepeatFilter`), the counts still held written at exit; idempotent."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    repeats = RepeatFilter(repeat_interval_s)
    repeats.install(handler)
    if not _configured:
        atexit.register(_flush_configured)  # before logging.shutdown: atexit runs last first
    _configured[:] = [(handler, repeats)]
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "aiokafka"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("aiokafka").setLevel(max(logging.getLevelName(level), logging.WARNING))
