"""Errors a reader of the projector's views can meet, each one sentence (HTTP 400 or 404)."""

from __future__ import annotations

SHOWN_CHARACTERS = 80
"""The most characters of a value an error sentence repeats."""


def quoted(value: str) -> str:
    """`value` as an error sentence quotes it: its repr, cut to `SHOWN_CHARACTERS` with an
    ellipsis (a query parameter of 100,000 characters made a 100 KB "sentence")."""
    if len(value) <= SHOWN_CHARACTERS:
        return repr(value)
    return repr(value[: SHOWN_CHARACTERS - 1] + "…")


class ProjectorError(Exception):
    """Base of the projector's user errors; `str(error)` is one sentence."""

    status_code = 400


class ViewError(ProjectorError):
    """A view was asked for with parameters it cannot take (HTTP 400)."""


class NotKnownError(ProjectorError):
    """The space or operation asked for is not in the store (HTTP 404)."""

    status_code = 404
