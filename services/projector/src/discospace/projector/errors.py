"""Errors a reader of the projector's views can meet, each one sentence (HTTP 400 or 404)."""

from __future__ import annotations


class ProjectorError(Exception):
    """Base of the projector's user errors; `str(error)` is one sentence."""

    status_code = 400


class ViewError(ProjectorError):
    """A view was asked for with parameters it cannot take (HTTP 400)."""


class NotKnownError(ProjectorError):
    """The space or operation asked for is not in the store (HTTP 404)."""

    status_code = 404
