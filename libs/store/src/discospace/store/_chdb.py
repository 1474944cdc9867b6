"""Opening embedded chDB, with its two ways to fail turned into readable errors.

chDB hosts one engine per process, bound to one data directory: opening another directory while
clients on the first are open fails. Across processes the engine takes an exclusive `flock` on
`<data dir>/status` (as a ClickHouse server does); a second process then fails with a bare
"Error initializing EmbeddedServer", so on failure we probe that lock to say who holds it.
"""

from __future__ import annotations

import fcntl
import re
from pathlib import Path
from typing import TYPE_CHECKING

from discospace.store.errors import (
    DataDirConflictError,
    DataDirLockedError,
    StoreError,
    StoreSettingsError,
    reason_of,
)

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

_OTHER_PATH = re.compile(r"already initialized with path '([^']*)'")
_STATUS_PID = re.compile(r"^PID:\s*(\d+)", re.MULTILINE)


def open_chdb(data_dir: Path) -> Client:
    """A chDB-backed client on `data_dir` (created if missing)."""
    import clickhouse_connect
    from clickhouse_connect.driver.exceptions import Error

    path = _prepared_dir(data_dir)
    try:
        return clickhouse_connect.get_client(interface="chdb", path=str(path), tz_mode="aware")
    except Error as error:
        raise _open_error(path, error) from error


def refuse_query_in_path(data_dir: Path) -> None:
    """A data dir holding '?' is refused: chDB reads what follows as connection options (a
    path `q?mode=ro` opened folder `q`, read-only)."""
    if "?" in str(data_dir):
        raise StoreSettingsError(
            f"The chDB data dir {data_dir} holds '?', which chDB reads as the start of "
            "connection options (it would open another folder): choose a path without it."
        )


def _prepared_dir(data_dir: Path) -> Path:
    refuse_query_in_path(data_dir)
    path = data_dir.expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(
            f"Cannot create the chDB data dir {path}: {error.strerror or error}."
        ) from error
    return path


def _open_error(path: Path, error: Exception) -> StoreError:
    other = _OTHER_PATH.search(str(error))
    if other:
        return DataDirConflictError(
            f"This process already has the chDB store at {other.group(1)} open and chDB opens one "
            f"data dir per process; close those clients before opening {path}, or use that dir."
        )
    holder = locked_by(path)
    if holder is not None:
        return DataDirLockedError(
            f"The chDB data dir {path} is in use by another process ({holder}); stop it, or give "
            "this one another data dir or a ClickHouse server through CLICKHOUSE_URL."
        )
    return StoreError(f"Cannot open the chDB store at {path}: {reason_of(error)}.")


def locked_by(path: Path) -> str | None:
    """Who holds the engine lock on a chDB data dir ("pid N"), or None when nobody does.

    Only meaningful when this process has no engine open on `path`: flock locks belong to open
    files, so our own engine's lock would look like another holder.
    """
    status = path / "status"
    try:
        with status.open("r") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _STATUS_PID.search(handle.read())
                return f"pid {pid.group(1)}" if pid else "pid unknown"
            fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError:  # absent, a folder, another user's: no lock to tell of (the open says why)
        return None
    return None
