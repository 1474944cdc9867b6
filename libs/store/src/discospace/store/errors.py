"""Errors a user of the store can meet: each one is a single readable sentence."""

from __future__ import annotations

import re

_TRAILER = re.compile(r"(\s*\((version [^)]*|[A-Z_]+)\))+\.?\s*$")
_MARK = "DB::Exception: "


class StoreError(Exception):
    """Base of every store error; `str(error)` is one sentence fit for a user."""


class StoreSettingsError(StoreError, ValueError):
    """The store settings cannot name a store (bad URL, bad database name): a bad value, as a
    service's start-up reports bad settings."""


class StoreUnreachableError(StoreError):
    """No ClickHouse server answered at the configured URL."""


class DataDirLockedError(StoreError):
    """Another process holds the chDB data directory."""


class DataDirConflictError(StoreError):
    """This process already has a different chDB data directory open."""


class MigrationError(StoreError):
    """The store schema cannot be brought to the version this code expects."""


def reason_of(error: BaseException) -> str:
    """The readable core of a ClickHouse or chDB error: its message, without code or trailer."""
    text = str(error).strip()
    start = text.find(_MARK)
    if start >= 0:
        text = text[start + len(_MARK) :]
    line = _TRAILER.sub("", text.splitlines()[0] if text else "")
    return line.strip().rstrip(" .:") or type(error).__name__
