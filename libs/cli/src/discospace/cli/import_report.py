"""What ``store import`` tells its user: a progress line while it works, a summary at the end.

- :class:`Progress`: one line on stderr at most every second, and only once the work has taken
  that long, so a small file prints none.
- :class:`ImportSummary`: rows read, imported (valid, invalid), already in the store, refused
  (the first few with their reason), ignored columns; as lines or, with ``--json``, a document.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

SHOWN_REFUSALS = 5


@dataclass
class ImportSummary:
    """What an import read and did (or, with ``--dry-run``, would do)."""

    file: str
    sha256: str
    space_id: str
    sample_store: str
    experiment_id: str
    import_id: str
    dry_run: bool
    rows_read: int = 0
    imported: int = 0
    imported_valid: int = 0
    imported_invalid: int = 0
    already_in_store: int = 0
    refused: int = 0
    refused_rows: list[dict[str, Any]] = field(default_factory=list)
    ignored_columns: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        verb = "Would import" if self.dry_run else "Imported"
        head = (
            f"{verb} {self.file} into sample store {self.sample_store} as {self.experiment_id} "
            f"(space {self.space_id}, import {self.import_id})"
        )
        counts = [
            ("rows read", f"{self.rows_read}"),
            ("would import" if self.dry_run else "imported", self._imported_text()),
            ("already in the store", f"{self.already_in_store}"),
            ("refused", f"{self.refused}" + (" (skipped)" if self.refused else "")),
        ]
        body = [f"  {name:<21}{value}" for name, value in counts]
        body += [f"    {refusal['reason']}" for refusal in self.refused_rows[:SHOWN_REFUSALS]]
        if self.refused > SHOWN_REFUSALS:
            body.append(f"    ... and {self.refused - SHOWN_REFUSALS} more")
        if self.ignored_columns:
            body.append(f"  {'ignored columns':<21}{', '.join(self.ignored_columns)}")
        tail = ["Dry run: nothing was published."] if self.dry_run else []
        return [head, *body, *tail]

    def _imported_text(self) -> str:
        return f"{self.imported} ({self.imported_valid} valid, {self.imported_invalid} invalid)"


class Progress:
    """One line on stderr at most every ``interval_s``, once the work has taken that long.

    On a terminal the line is rewritten in place; elsewhere (a log) each is its own line.
    """

    def __init__(self, what: str, interval_s: float = 1.0, stream: TextIO | None = None) -> None:
        self.what, self.interval_s = what, interval_s
        self.stream = stream or sys.stderr
        self._next = time.monotonic() + interval_s
        self._shown = False

    def update(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval_s
        count = f"{done}/{total} ({100 * done // max(total, 1)}%)" if total else f"{done}"
        line = f"{self.what}: {count}"
        self.stream.write("\r" + line if self.stream.isatty() else line + "\n")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown and self.stream.isatty():
            self.stream.write("\n")
            self.stream.flush()
