"""Logging of the CLI process, kept light: the root callback runs it before every command."""

from __future__ import annotations

import logging


def silence_library_logs() -> None:
    """Library log lines (aiokafka's connection errors) never reach a user's terminal:
    without a handler, Python would print warnings on stderr next to our one-line errors."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())
